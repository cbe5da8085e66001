// What every contract shares (k8s/contract/contract.h).
#include "k8s/contract/contract.h"

#include <gtest/gtest.h>

#include "k8s/contract/fracpack.h"

namespace fracpack::k8s::contract_test {
namespace {

// fracpack.io/gpu, nvidia.com/gpu: kubelet's device IDs are the cards.
TEST(Contract, OneDeviceIdIsOneCardByDefault) {
  const FracpackContract contract;
  EXPECT_EQ(*contract.cards_of_devices(1), 1);
  EXPECT_EQ(*contract.cards_of_devices(64), 64);
  EXPECT_EQ(contract.device_ids_per_card(), 0);
  for (int64_t bad : {0, 65}) {
    auto cards = contract.cards_of_devices(bad);
    ASSERT_FALSE(cards.ok());
    EXPECT_EQ(cards.message(), std::to_string(bad) + " is not a device count 1..64");
  }
}

}  // namespace
}  // namespace fracpack::k8s::contract_test
