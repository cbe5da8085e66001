// scheduling/allocation_check.h: a record holds no more than its pod asks.
#include "scheduling/allocation_check.h"

#include <gtest/gtest.h>

#include "test/support/testlib.h"

namespace fracpack::scheduling::allocation_check_test {
namespace {

PodRequest asks(int cards, int64_t memory_mib, int memory_percent, int cores, bool init = false) {
  PodRequest pod;
  pod.containers.push_back(ContainerRequest{"main", init, cards, memory_mib, memory_percent, cores});
  return pod;
}

Allocation holds(std::vector<CardShare> cards, bool init = false, std::string container = "main") {
  Allocation a;
  a.node = "n";
  a.containers.push_back(ContainerAllocation{std::move(container), init, std::move(cards)});
  return a;
}

TEST(AllocationWithinRequest, ARecordWithinItsRequestIsAccepted) {
  EXPECT_TRUE(allocation_within_request(asks(2, 4096, 0, 300), holds({{0, "", 4096, 300}, {1, "", 2048, 100}}), nullptr).ok());
}

TEST(AllocationWithinRequest, EachWayOfHoldingMoreIsRefusedNamingTheContainerAndCard) {
  const PodRequest pod = asks(1, 4096, 0, 300);
  EXPECT_EQ(allocation_within_request(pod, holds({{0, "", 4096, 300}}, false, "sidecar"), nullptr).message(),
            "container sidecar asks for no GPU");
  EXPECT_EQ(allocation_within_request(pod, holds({{0, "", 4096, 300}}, true), nullptr).message(), "container main is not an init container");
  EXPECT_EQ(allocation_within_request(pod, holds({{0, "", 4096, 300}, {1, "", 4096, 300}}), nullptr).message(),
            "container main holds 2 cards but asks for 1");
  EXPECT_EQ(allocation_within_request(pod, holds({{0, "", 4096, 400}}), nullptr).message(),
            "container main, card 0: 40% compute, more than the 30% asked");
  EXPECT_EQ(allocation_within_request(pod, holds({{0, "", 8192, 300}}), nullptr).message(),
            "container main, card 0: 8192 MiB, more than the 4096 MiB asked");
}

// A percent of the card's memory is checked against the card's size when
// the node is known, and cannot be checked otherwise.
TEST(AllocationWithinRequest, APercentOfTheCardIsCheckedAgainstTheCardsSizeWhenTheNodeIsKnown) {
  const PodRequest half = asks(1, 0, 50, 300);
  const NodeSpec node = fracpack::testing::node("n", 1, 16384);
  EXPECT_TRUE(allocation_within_request(half, holds({{0, "", 8192, 300}}), &node).ok());
  EXPECT_EQ(allocation_within_request(half, holds({{0, "", 8193, 300}}), &node).message(),
            "container main, card 0: 8193 MiB, more than the 8192 MiB asked");
  EXPECT_TRUE(allocation_within_request(half, holds({{0, "", 16384, 300}}), nullptr).ok()) << "its size is not known";
}

}  // namespace
}  // namespace fracpack::scheduling::allocation_check_test
