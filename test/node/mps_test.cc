// The MPS backend's node side: the control daemon's status file
// (node/mps_status.h) and its supervisor (node/mps_daemon.h), run against
// a stand-in for nvidia-cuda-mps-control (test/node/fake-mps-control) and
// the fake NVML (compute modes in a file).
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "node/mps_daemon.h"
#include "node/mps_status.h"

#include "common/time.h"

namespace fracpack::node::mps_test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::system_clock;

TEST(MpsStatus, ReadsBackWhatItWrote) {
  MpsStatus s;
  s.state = "ready";
  s.heartbeat = Clock::time_point(std::chrono::seconds(1800000000));
  s.pid = 42;
  s.cards = {"GPU-0", "GPU-1"};
  s.restarts = 3;
  s.message = "";
  EXPECT_EQ(format_mps_status(s), "{\"cards\":[\"GPU-0\",\"GPU-1\"],\"heartbeat\":\"" + format_rfc3339(s.heartbeat) +
                                      "\",\"message\":\"\",\"pid\":42,\"restarts\":3,\"state\":\"ready\"}\n")
      << "one line, as it was written before";
  auto back = parse_mps_status(format_mps_status(s));
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(*back, s);
  EXPECT_FALSE(parse_mps_status("{\"state\":\"ready\"}").ok()) << "no heartbeat";
  EXPECT_FALSE(parse_mps_status("ready").ok());
}

TEST(MpsStatus, ServesACardOnlyWhenReadyFreshAndNamingIt) {
  MpsStatus s;
  s.state = "ready";
  s.heartbeat = Clock::now();
  s.cards = {"GPU-0"};
  const auto now = s.heartbeat + 2s;
  EXPECT_TRUE(mps_serves(format_mps_status(s), "GPU-0", now, 15s).ok());
  EXPECT_NE(mps_serves(format_mps_status(s), "GPU-1", now, 15s).message().find("does not serve this card"), std::string::npos);
  EXPECT_NE(mps_serves(format_mps_status(s), "GPU-0", s.heartbeat + 20s, 15s).message().find("20 s old"), std::string::npos);
  s.state = "down";
  s.message = "nvidia-cuda-mps-control killed by signal 9";
  EXPECT_NE(mps_serves(format_mps_status(s), "GPU-0", now, 15s).message().find("is down: nvidia-cuda-mps-control killed"),
            std::string::npos);
  EXPECT_NE(mps_serves(Error{"no such file"}, "GPU-0", now, 15s).message().find("is fracpack mps-control-daemon running?"),
            std::string::npos);
  EXPECT_NE(mps_serves(std::string("{"), "GPU-0", now, 15s).message().find("malformed"), std::string::npos);
}

class MpsDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("fracpack-mps-" + std::to_string(::getpid()) + "-" +
                                                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    modes_ = (dir_ / "modes").string();
    setenv("FAKE_NVML_COMPUTE_MODES", modes_.c_str(), 1);
    setenv("FAKE_MPS_LOG", (dir_ / "mps.log").c_str(), 1);
    setenv("FAKE_NVML_EVENTS", (dir_ / "events").c_str(), 1);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void cards(const std::string& text) {
    const std::string path = (dir_ / "nvml").string();
    std::ofstream(path) << "driver;version=550.54.15\n" << text;
    setenv("FAKE_NVML_CONFIG", path.c_str(), 1);
  }
  MpsDaemonOptions options() const {
    MpsDaemonOptions o;
    o.control = FRACPACK_FAKE_MPS_CONTROL;
    o.dir = (dir_ / "mps").string();
    o.nvml_library = FRACPACK_FAKE_NVML;
    o.sysfs = (dir_ / "sys").string();
    o.heartbeat = 100ms;
    o.report = [](bool, const std::string&) {};
    return o;
  }
  Result<MpsStatus> status() const {
    std::ifstream f(dir_ / "mps" / "status");
    std::stringstream text;
    text << f.rdbuf();
    if (!f) return Error{"no status"};
    return parse_mps_status(text.str());
  }
  bool wait_status(const std::function<bool(const MpsStatus&)>& want, std::chrono::milliseconds limit = 10s) const {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      if (auto s = status(); s && want(*s)) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }
  // The last mode set per card (the fake NVML's file).
  std::map<std::string, std::string> modes() const {
    std::map<std::string, std::string> out;
    std::ifstream f(modes_);
    for (std::string line; std::getline(f, line);) {
      const size_t eq = line.find('=');
      if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
    }
    return out;
  }

  std::filesystem::path dir_;
  std::string modes_;
};

TEST_F(MpsDaemonTest, ServesTheFullCardsInExclusiveModeAndPutsThemBack) {
  cards("card;uuid=GPU-0;name=NVIDIA A100-SXM4-40GB;memory_mib=40960\n"
        "card;uuid=GPU-1;name=NVIDIA A100-SXM4-40GB;memory_mib=40960;mig=1\n"
        "mig;parent=1;slot=0;uuid=MIG-a;name=NVIDIA A100-SXM4-40GB MIG 3g.20gb;memory_mib=20480\n");
  MpsDaemon daemon(options());
  Status result = Error{"not run"};
  std::jthread run([&](std::stop_token st) { result = daemon.run(st); });
  ASSERT_TRUE(wait_status([](const MpsStatus& s) { return s.state == "ready"; })) << (status() ? status()->message : "no status");
  const MpsStatus ready = *status();
  EXPECT_EQ(ready.cards, (std::vector<std::string>{"GPU-0"})) << "a MIG card's instances are not MPS's";
  EXPECT_GT(ready.pid, 0);
  EXPECT_EQ(modes(), (std::map<std::string, std::string>{{"GPU-0", "3"}})) << "EXCLUSIVE_PROCESS";
  EXPECT_TRUE(std::filesystem::is_directory(dir_ / "mps" / "pipe"));
  EXPECT_EQ(std::filesystem::status(dir_ / "mps" / "shm").permissions() & std::filesystem::perms::others_write,
            std::filesystem::perms::others_write)
      << "clients of any user reach the shared memory";
  // With a MIG instance beside them, the daemon is told its cards by UUID.
  EXPECT_EQ(daemon.control_env().at("CUDA_VISIBLE_DEVICES"), "GPU-0");
  // A heartbeat is written while it answers.
  const auto first = ready.heartbeat;
  EXPECT_TRUE(wait_status([&](const MpsStatus& s) { return s.heartbeat > first; }));
  run.request_stop();
  run.join();
  EXPECT_TRUE(result.ok()) << result.message();
  EXPECT_EQ(status()->state, "stopped");
  EXPECT_EQ(modes(), (std::map<std::string, std::string>{{"GPU-0", "0"}})) << "the mode it had";
  std::ifstream log(dir_ / "mps.log");
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_NE(text.str().find("command quit"), std::string::npos) << text.str();
}

TEST_F(MpsDaemonTest, AControlDaemonThatDiesIsReportedDownAndStartedAgain) {
  cards("card;uuid=GPU-0;name=NVIDIA A100-SXM4-40GB;memory_mib=40960\n");
  MpsDaemon daemon(options());
  std::jthread run([&](std::stop_token st) { (void)daemon.run(st); });
  ASSERT_TRUE(wait_status([](const MpsStatus& s) { return s.state == "ready"; }));
  const int64_t pid = status()->pid;
  ASSERT_EQ(::kill(static_cast<pid_t>(pid), SIGKILL), 0);
  ASSERT_TRUE(wait_status([](const MpsStatus& s) { return s.state == "down"; }, 5s)) << "the agent must learn it at once";
  EXPECT_NE(status()->message.find("killed by signal 9"), std::string::npos) << status()->message;
  ASSERT_TRUE(wait_status([&](const MpsStatus& s) { return s.state == "ready" && s.pid != pid; }));
  EXPECT_EQ(status()->restarts, 1);
  EXPECT_EQ(daemon.stats().starts.load(), 2u);
  EXPECT_EQ(daemon.stats().failures.load(), 1u);
}

// The supervisor's container killed (SIGKILL: no quit): its control daemon,
// in a process group of its own, lives on; the next supervisor asks it to
// quit before starting its own (a second nvidia-cuda-mps-control would not
// start while the first holds the pipe).
TEST_F(MpsDaemonTest, AControlDaemonLeftByAKilledSupervisorIsQuitFirst) {
  cards("card;uuid=GPU-0;name=NVIDIA A100-SXM4-40GB;memory_mib=40960\n");
  const auto o = options();
  std::filesystem::create_directories(o.dir + "/pipe");
  const std::map<std::string, std::string> env{{"CUDA_MPS_PIPE_DIRECTORY", o.dir + "/pipe"}};
  // A leftover: a control daemon started by hand, the way the killed supervisor left it.
  const std::string leftover_cmd = "CUDA_MPS_PIPE_DIRECTORY=" + o.dir + "/pipe setsid " + FRACPACK_FAKE_MPS_CONTROL + " -f >/dev/null 2>&1 &";
  ASSERT_EQ(std::system(leftover_cmd.c_str()), 0);
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < end && !mps_control_command(o.control, env, "get_default_active_thread_percentage", 2s)) {
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(mps_control_command(o.control, env, "get_default_active_thread_percentage", 2s).ok()) << "the leftover answers";
  MpsDaemon daemon(o);
  std::jthread run([&](std::stop_token st) { (void)daemon.run(st); });
  ASSERT_TRUE(wait_status([](const MpsStatus& s) { return s.state == "ready"; }));
  std::ifstream log(dir_ / "mps.log");
  std::stringstream text;
  text << log.rdbuf();
  const std::string lines = text.str();
  const size_t quit = lines.find("command quit"), second = lines.find("daemon started", lines.find("daemon started") + 1);
  ASSERT_NE(quit, std::string::npos) << lines;
  ASSERT_NE(second, std::string::npos) << lines;
  EXPECT_LT(quit, second) << "the leftover quit before the supervisor's own started: " << lines;
  EXPECT_EQ(daemon.stats().starts.load(), 1u);
}

// Found in review: a supervisor killed (no clean stop) left its cards in
// EXCLUSIVE_PROCESS; the next one took that for their mode of before and
// "restored" it at its own stop.
TEST_F(MpsDaemonTest, TheModesOfBeforeMpsAreRestoredAfterASupervisorThatWasKilled) {
  cards("card;uuid=GPU-0;name=NVIDIA A100-SXM4-40GB;memory_mib=40960\n");
  const auto o = options();
  std::filesystem::create_directories(o.dir);
  // What the killed one left: the card in EXCLUSIVE_PROCESS, its mode of before kept.
  std::ofstream(modes_) << "GPU-0=3\n";
  std::ofstream(o.dir + "/modes") << "GPU-0=0\n";
  {
    MpsDaemon daemon(o);
    std::jthread run([&](std::stop_token st) { (void)daemon.run(st); });
    ASSERT_TRUE(wait_status([](const MpsStatus& s) { return s.state == "ready"; }));
  }
  EXPECT_EQ(modes().at("GPU-0"), "0") << "DEFAULT, as before MPS";
  EXPECT_FALSE(std::filesystem::exists(o.dir + "/modes")) << "kept only until a clean stop";
}

TEST_F(MpsDaemonTest, ACardWhoseModeCannotBeSetStopsItWithTheReason) {
  cards("card;uuid=GPU-0;name=NVIDIA A100-SXM4-40GB;memory_mib=40960\n"
        "card;uuid=GPU-1;name=NVIDIA A100-SXM4-40GB;memory_mib=40960;compute_mode=denied\n");
  MpsDaemon daemon(options());
  std::stop_source never;
  const Status s = daemon.run(never.get_token());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("GPU-1"), std::string::npos) << s.message();
  EXPECT_EQ(status()->state, "stopped");
  EXPECT_EQ(modes().at("GPU-0"), "0") << "the card already switched is put back";
}

TEST_F(MpsDaemonTest, NoCardMpsCanServeIsAnError) {
  cards("card;uuid=GPU-1;name=NVIDIA A100-SXM4-40GB;memory_mib=40960;mig=1\n"
        "mig;parent=0;slot=0;uuid=MIG-a;name=NVIDIA A100-SXM4-40GB MIG 3g.20gb;memory_mib=20480\n");
  MpsDaemon daemon(options());
  std::stop_source never;
  const Status s = daemon.run(never.get_token());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no card MPS can serve"), std::string::npos) << s.message();
}

// The MPS server's shared memory is a tmpfs of its own (found in review:
// it was a folder of the host's /run, the daemon's own /dev/shm another).
TEST(MpsShm, ATmpfsOfTheGivenSizeIsMountedOnceAtTheShmFolder) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting needs root";
  const auto dir = std::filesystem::temp_directory_path() / ("fracpack-mps-shm-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto first = prepare_mps_shm(dir.string(), int64_t{64} << 20);
  ASSERT_TRUE(first.ok()) << first.message();
  EXPECT_NE(first->find("tmpfs of 64 MiB mounted"), std::string::npos) << *first;
  std::ifstream mounts("/proc/self/mountinfo");
  std::stringstream text;
  text << mounts.rdbuf();
  EXPECT_NE(text.str().find((dir / "shm").string() + " "), std::string::npos);
  auto again = prepare_mps_shm(dir.string(), int64_t{64} << 20);
  ASSERT_TRUE(again.ok()) << again.message();
  EXPECT_NE(again->find("there already"), std::string::npos) << *again;
  EXPECT_EQ(std::filesystem::status(dir / "shm").permissions() & std::filesystem::perms::others_write, std::filesystem::perms::others_write);
  ::umount((dir / "shm").c_str());
  std::filesystem::remove_all(dir);
}

TEST(MpsControlCommand, AClientWithoutADaemonFailsWithItsOutput) {
  const auto dir = std::filesystem::temp_directory_path() / ("fracpack-mps-client-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto r = mps_control_command(FRACPACK_FAKE_MPS_CONTROL, {{"CUDA_MPS_PIPE_DIRECTORY", dir.string()}}, "get_default_active_thread_percentage",
                               2s);
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("exited with status 1: Cannot find MPS control daemon process"), std::string::npos) << r.message();
}

}  // namespace
}  // namespace fracpack::node::mps_test
