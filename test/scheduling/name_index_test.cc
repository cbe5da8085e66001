#include "scheduling/name_index.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace fracpack::scheduling {
namespace {

struct Named {
  std::string n;
  const std::string& name() const { return n; }
};

TEST(NameIndex, FindsInsertedObjectsAndNothingElse) {
  NameIndex<Named> index;
  EXPECT_EQ(index.find("a"), nullptr) << "empty: no table yet";
  Named a{"a"}, b{"b"};
  index.insert(&a);
  index.insert(&b);
  EXPECT_EQ(index.find("a"), &a);
  EXPECT_EQ(index.find("b"), &b);
  EXPECT_EQ(index.find("c"), nullptr);
  EXPECT_EQ(index.size(), 2u);
}

TEST(NameIndex, InsertingANameAgainRepointsIt) {
  NameIndex<Named> index;
  Named first{"node-1"}, second{"node-1"};
  index.insert(&first);
  index.insert(&second);
  EXPECT_EQ(index.find("node-1"), &second);
  EXPECT_EQ(index.size(), 1u);
}

TEST(NameIndex, EraseOfAnAbsentNameIsNothing) {
  NameIndex<Named> index;
  index.erase("x");  // no table
  Named a{"a"};
  index.insert(&a);
  index.erase("x");
  EXPECT_EQ(index.find("a"), &a);
  EXPECT_EQ(index.size(), 1u);
}

TEST(NameIndex, GrowsToStayAtMostHalfFull) {
  NameIndex<Named> index;
  std::vector<std::unique_ptr<Named>> objects;
  for (int i = 0; i < 1000; ++i) {
    objects.push_back(std::make_unique<Named>(Named{"node-" + std::to_string(i)}));
    index.insert(objects.back().get());
    ASSERT_LE(index.size() * 2, index.capacity());
  }
  EXPECT_EQ(index.capacity() & (index.capacity() - 1), 0u) << "a power of two";
  for (const auto& o : objects) EXPECT_EQ(index.find(o->n), o.get());
}

// Erasing shifts later entries of a probe run back instead of leaving
// tombstones: after any mix of inserts and erases, every present name is
// found and every erased one is not, as a std::map says.
TEST(NameIndex, MatchesAMapUnderRandomInsertsAndErases) {
  std::mt19937 rng(7);
  NameIndex<Named> index;
  std::map<std::string, std::unique_ptr<Named>> model;
  for (int step = 0; step < 20000; ++step) {
    // Few distinct names: probe runs collide and wrap often.
    const std::string name = "n" + std::to_string(rng() % 300);
    if (rng() % 3 == 0) {
      index.erase(name);
      model.erase(name);
    } else {
      auto object = std::make_unique<Named>(Named{name});
      index.insert(object.get());
      model[name] = std::move(object);
    }
    if (step % 500 == 0) {
      for (int i = 0; i < 300; ++i) {
        const std::string n = "n" + std::to_string(i);
        auto it = model.find(n);
        ASSERT_EQ(index.find(n), it == model.end() ? nullptr : it->second.get()) << n << " at step " << step;
      }
    }
  }
  EXPECT_EQ(index.size(), model.size());
}

}  // namespace
}  // namespace fracpack::scheduling
