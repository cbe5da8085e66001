// What every contract checks of a node's card list, and the operator's card
// cordon (k8s/contract/card_list.h). Errors name the node and the annotation.
#include "k8s/contract/card_list.h"

#include <gtest/gtest.h>

namespace fracpack::k8s::card_list_test {
namespace {

scheduling::NodeSpec cards(std::vector<std::pair<int, std::string>> list) {
  scheduling::NodeSpec spec;
  spec.name = "n1";
  for (auto& [index, uuid] : list) {
    scheduling::Card c;
    c.index = index;
    c.uuid = uuid;
    spec.cards.push_back(c);
  }
  return spec;
}

TEST(CardList, CardsAreSortedByIndex) {
  auto spec = cards({{2, "GPU-c"}, {0, "GPU-a"}, {1, "GPU-b"}});
  ASSERT_TRUE(check_cards(spec, "node n1", "annotation x").ok());
  ASSERT_EQ(spec.cards.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(spec.cards[i].index, i);
  EXPECT_EQ(spec.cards[0].uuid, "GPU-a");
  EXPECT_EQ(spec.cards[2].uuid, "GPU-c");
}

TEST(CardList, AnIndexOrAUuidTwiceIsRefused) {
  auto index = cards({{0, "GPU-a"}, {0, "GPU-b"}});
  const Status twice = check_cards(index, "node n1", "annotation hami.io/node-nvidia-register");
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.message(), "node n1: annotation hami.io/node-nvidia-register: card index 0 appears twice");
  auto uuid = cards({{0, "GPU-a"}, {1, "GPU-a"}});
  const Status same = check_cards(uuid, "node n1", "src");
  ASSERT_FALSE(same.ok());
  EXPECT_EQ(same.message(), "node n1: src: uuid GPU-a appears twice");
  // Cards without UUIDs are not duplicates of each other.
  auto blank = cards({{0, ""}, {1, ""}});
  EXPECT_TRUE(check_cards(blank, "node n1", "src").ok());
}

TEST(CardList, AtMost64Cards) {
  std::vector<std::pair<int, std::string>> list;
  for (int i = 0; i < 64; ++i) list.push_back({i, "GPU-" + std::to_string(i)});
  auto ok = cards(list);
  EXPECT_TRUE(check_cards(ok, "node n1", "src").ok());
  list.push_back({64, "GPU-64"});
  auto too_many = cards(list);
  const Status refused = check_cards(too_many, "node n1", "src");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("more than 64 cards"), std::string::npos) << refused.message();
}

TEST(CardList, CordonsNameCardsByUuidOrIndex) {
  auto spec = cards({{0, "GPU-a"}, {1, "GPU-b"}, {2, "GPU-c"}});
  ASSERT_TRUE(apply_cordons(spec, "GPU-b, 2", "node n1", "fracpack.io/cordon").ok());
  EXPECT_FALSE(spec.cards[0].cordoned);
  EXPECT_TRUE(spec.cards[1].cordoned);
  EXPECT_TRUE(spec.cards[2].cordoned);
  auto none = cards({{0, "GPU-a"}});
  ASSERT_TRUE(apply_cordons(none, "", "node n1", "fracpack.io/cordon").ok());
  EXPECT_FALSE(none.cards[0].cordoned);
}

TEST(CardList, ACordonNamingNoCardIsAnError) {
  auto spec = cards({{0, "GPU-a"}, {1, "GPU-b"}});
  const Status unknown = apply_cordons(spec, "GPU-a,GPU-z", "node n1", "fracpack.io/cordon");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.message(), "node n1: annotation fracpack.io/cordon: \"GPU-z\" is neither a card's UUID nor its index");
  auto index = cards({{0, "GPU-a"}});
  EXPECT_FALSE(apply_cordons(index, "5", "node n1", "fracpack.io/cordon").ok());
  // A UUID that looks like a number does not name a card by index.
  auto numeric = cards({{0, "7"}, {1, "GPU-b"}});
  ASSERT_TRUE(apply_cordons(numeric, "7", "node n1", "a").ok());
  EXPECT_TRUE(numeric.cards[0].cordoned);
  EXPECT_FALSE(numeric.cards[1].cordoned);
}

}  // namespace
}  // namespace fracpack::k8s::card_list_test
