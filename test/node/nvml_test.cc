// node/nvml: discovery and health through the real dlopen path, against the
// fake NVML library (test/node/fake_nvml.cc).
#include "node/nvml.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace fracpack::node::nvml_test {
namespace {

class NvmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("fracpack-nvml-" + std::to_string(::getpid()) + "-" +
                                                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    events_ = (dir_ / "events").string();
    std::ofstream(events_).flush();
    setenv("FAKE_NVML_EVENTS", events_.c_str(), 1);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void config(const std::string& text) {
    const std::string path = (dir_ / "config").string();
    std::ofstream(path) << text;
    setenv("FAKE_NVML_CONFIG", path.c_str(), 1);
  }
  void event(const std::string& line) { std::ofstream(events_, std::ios::app) << line << "\n"; }
  std::unique_ptr<Nvml> open() {
    auto n = Nvml::open(FRACPACK_FAKE_NVML, (dir_ / "sys").string());
    EXPECT_TRUE(n.ok()) << n.message();
    return n ? std::move(*n) : nullptr;
  }

  std::filesystem::path dir_;
  std::string events_;
};

TEST_F(NvmlTest, DiscoversEachCardsIdentityMemoryNumaAndMinor) {
  config(
      "driver;version=550.54.15\n"
      "card;uuid=GPU-aaaa;name=NVIDIA A100-SXM4-40GB;memory_mib=40960;minor=3;numa=1\n"
      "card;uuid=GPU-bbbb;name=NVIDIA A100-SXM4-40GB;memory_mib=40960;minor=0;busid=00000000:3B:00.0\n");
  // The second card's NUMA node comes from sysfs (HAMi's lookup).
  std::filesystem::create_directories(dir_ / "sys/bus/pci/devices/0000:3b:00.0");
  std::ofstream(dir_ / "sys/bus/pci/devices/0000:3b:00.0/numa_node") << "1\n";
  auto nvml = open();
  auto d = nvml->discover();
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d->driver_version, "550.54.15");
  ASSERT_EQ(d->devices.size(), 2u);
  EXPECT_EQ(d->devices[0].index, 0);
  EXPECT_EQ(d->devices[0].uuid, "GPU-aaaa");
  EXPECT_EQ(d->devices[0].model, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(d->devices[0].memory_mib, 40960);
  EXPECT_EQ(d->devices[0].minor, 3);  // not the index
  EXPECT_EQ(d->devices[0].numa, 1);
  EXPECT_TRUE(d->devices[0].healthy);
  EXPECT_EQ(d->devices[1].index, 1);
  EXPECT_EQ(d->devices[1].numa, 1);
  EXPECT_EQ(d->devices[1].minor, 0);
}

TEST_F(NvmlTest, ANoNumaMachineReadsNodeZero) {
  config("card;uuid=GPU-aaaa;memory_mib=16384;busid=00000000:AF:00.0\n");
  std::filesystem::create_directories(dir_ / "sys/bus/pci/devices/0000:af:00.0");
  std::ofstream(dir_ / "sys/bus/pci/devices/0000:af:00.0/numa_node") << "-1\n";
  auto d = open()->discover();
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->devices[0].numa, 0);
}

TEST_F(NvmlTest, AMigCardIsItsInstances) {
  config(
      "card;uuid=GPU-plain;memory_mib=81920;numa=0\n"
      "card;uuid=GPU-mig;name=NVIDIA A100-SXM4-80GB;memory_mib=81920;numa=1;mig=1\n"
      "mig;parent=1;slot=0;uuid=MIG-one;name=NVIDIA A100-SXM4-80GB MIG 3g.40gb;memory_mib=40192\n"
      "mig;parent=1;slot=2;uuid=MIG-two;name=NVIDIA A100-SXM4-80GB MIG 1g.10gb;memory_mib=9728\n");
  auto d = open()->discover();
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->devices.size(), 3u);
  EXPECT_EQ(d->devices[0].uuid, "GPU-plain");
  EXPECT_EQ(d->devices[1].uuid, "MIG-one");
  EXPECT_EQ(d->devices[1].index, 64 + 8 * 1 + 0);  // never a card's index
  EXPECT_EQ(d->devices[1].memory_mib, 40192);
  EXPECT_EQ(d->devices[1].parent_uuid, "GPU-mig");
  EXPECT_EQ(d->devices[1].numa, 1);
  EXPECT_EQ(d->devices[2].uuid, "MIG-two");
  EXPECT_EQ(d->devices[2].index, 64 + 8 * 1 + 2);
  EXPECT_EQ(d->devices[2].model, "NVIDIA A100-SXM4-80GB MIG 1g.10gb");
}

TEST_F(NvmlTest, ACardNvmlCannotReadIsReportedUnhealthyNotDropped) {
  config(
      "card;uuid=GPU-good;memory_mib=16384\n"
      "card;uuid=GPU-bad;memory_mib=16384;error=memory\n"
      "card;error=handle\n");
  auto d = open()->discover();
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->devices.size(), 3u);
  EXPECT_TRUE(d->devices[0].healthy);
  EXPECT_FALSE(d->devices[1].healthy);
  EXPECT_EQ(d->devices[1].uuid, "GPU-bad");
  EXPECT_NE(d->devices[1].problem.find("nvmlDeviceGetMemoryInfo"), std::string::npos) << d->devices[1].problem;
  EXPECT_FALSE(d->devices[2].healthy);
  EXPECT_EQ(d->devices[2].index, 2);
  EXPECT_NE(d->devices[2].problem.find("nvmlDeviceGetHandleByIndex"), std::string::npos) << d->devices[2].problem;
}

TEST_F(NvmlTest, ALibraryThatCannotLoadOrIsNotNvmlSaysSo) {
  auto missing = Nvml::open("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("/nonexistent/libnvidia-ml.so.1 cannot be loaded"), std::string::npos) << missing.message();
  auto other = Nvml::open("libz.so.1");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.message().find("lacks nvmlInit_v2"), std::string::npos) << other.message();
  unsetenv("FAKE_NVML_CONFIG");  // the fake's nvmlInit then fails as a missing driver does
  auto no_driver = Nvml::open(FRACPACK_FAKE_NVML);
  ASSERT_FALSE(no_driver.ok());
  EXPECT_NE(no_driver.message().find("nvmlInit failed: Driver Not Loaded"), std::string::npos) << no_driver.message();
}

TEST_F(NvmlTest, HealthEventsNameTheCardAndSkipApplicationXids) {
  config("card;uuid=GPU-aaaa;memory_mib=16384\ncard;uuid=GPU-bbbb;memory_mib=16384\n");
  auto nvml = open();
  ASSERT_TRUE(nvml->discover().ok());
  EXPECT_TRUE(nvml->wait_health(std::chrono::milliseconds(20)).empty());
  event("xid;uuid=GPU-bbbb;code=13");  // an application's fault: the card is fine
  EXPECT_TRUE(nvml->wait_health(std::chrono::milliseconds(20)).empty());
  event("xid;uuid=GPU-bbbb;code=79");  // fallen off the bus
  auto events = nvml->wait_health(std::chrono::milliseconds(500));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].uuid, "GPU-bbbb");
  EXPECT_EQ(events[0].problem, "Xid 79");
  event("lost;uuid=GPU-aaaa");  // stops answering, without an event
  nvml->wait_health(std::chrono::milliseconds(20));
  events = nvml->wait_health(std::chrono::milliseconds(20));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].uuid, "GPU-aaaa");
  EXPECT_NE(events[0].problem.find("GPU is lost"), std::string::npos) << events[0].problem;
}

}  // namespace
}  // namespace fracpack::node::nvml_test
