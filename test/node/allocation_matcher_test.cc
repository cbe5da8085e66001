// node/allocation_matcher: which pod's record answers kubelet's Allocate.
#include "node/allocation_matcher.h"

#include <gtest/gtest.h>

#include "test/support/waiting_pods.h"

namespace fracpack::node::allocation_matcher_test {
namespace {

using scheduling::CardShare;

CardShare share(int index, int64_t mib, int cores_milli) { return CardShare{index, "GPU-" + std::to_string(index), mib, cores_milli}; }

WaitingPod pod(const std::string& name, const std::string& created, std::vector<std::pair<GpuContainer, std::vector<CardShare>>> cs) {
  return test::waiting_pod(name, created, std::move(cs));
}

GpuContainer ctr(const std::string& name, int devices, bool init = false) { return GpuContainer{name, init, devices, {}}; }

TEST(AllocationMatcher, OneWaitingPodGetsItsRecordedCards) {
  AllocationMatcher m;
  m.set_pods({pod("a", "2026-01-01T00:00:00Z", {{ctr("main", 1), {share(2, 8192, 500)}}})});
  auto a = m.allocate(1);
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(a->pod_key, "default/a");
  EXPECT_EQ(a->container, "main");
  ASSERT_EQ(a->cards.size(), 1u);
  EXPECT_EQ(a->cards[0].index, 2);
  // Served: a second Allocate has no candidate.
  auto again = m.allocate(1);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.message().find("no pod bound to this node waits for a container asking 1 device"), std::string::npos) << again.message();
}

TEST(AllocationMatcher, TheDeviceCountTellsPodsApart) {
  AllocationMatcher m;
  m.set_pods({pod("one", "2026-01-01T00:00:00Z", {{ctr("c", 1), {share(0, 4096, 0)}}}),
              pod("two", "2026-01-01T00:00:01Z", {{ctr("c", 2), {share(1, 0, 1000), share(3, 0, 1000)}}})});
  auto two = m.allocate(2);
  ASSERT_TRUE(two.ok()) << two.message();
  EXPECT_EQ(two->pod_key, "default/two");
  EXPECT_EQ(two->cards.size(), 2u);
  auto one = m.allocate(1);
  ASSERT_TRUE(one.ok()) << one.message();
  EXPECT_EQ(one->pod_key, "default/one");
}

TEST(AllocationMatcher, APodsContainersFollowInKubeletsOrderInitFirst) {
  AllocationMatcher m;
  m.set_pods({pod("multi", "2026-01-01T00:00:00Z",
                  {{ctr("setup", 1, true), {share(0, 2048, 100)}},
                   {ctr("app", 1), {share(1, 8192, 500)}},
                   {ctr("sidecar", 1), {share(0, 1024, 100)}}}),
              // Another pod asking one device: once "multi" has begun, its
              // next containers are served before anyone else.
              pod("other", "2026-01-01T00:00:05Z", {{ctr("c", 1), {share(3, 1024, 100)}}})});
  // Both pods ask one device first, on different cards: ambiguous.
  auto first = m.allocate(1);
  ASSERT_FALSE(first.ok());
  EXPECT_NE(first.message().find("cannot tell which pod kubelet is admitting: 2 pods were seen bound together"), std::string::npos)
      << first.message();
  // kubelet shows it on the pod it admits, whoever's: no other pod named.
  EXPECT_EQ(first.message().find("default/"), std::string::npos) << first.message();
}

TEST(AllocationMatcher, OnceAPodHasBegunItsNextContainersAreItsOwn) {
  AllocationMatcher m;
  m.set_pods({pod("multi", "2026-01-01T00:00:00Z",
                  {{ctr("setup", 2, true), {share(0, 2048, 100), share(1, 2048, 100)}},
                   {ctr("app", 1), {share(1, 8192, 500)}},
                   {ctr("sidecar", 1), {share(0, 1024, 100)}}}),
              pod("other", "2026-01-01T00:00:05Z", {{ctr("c", 1), {share(3, 1024, 100)}}})});
  auto setup = m.allocate(2);
  ASSERT_TRUE(setup.ok()) << setup.message();
  EXPECT_EQ(setup->container, "setup");
  auto app = m.allocate(1);  // "other" asks one device too, but kubelet is inside "multi"
  ASSERT_TRUE(app.ok()) << app.message();
  EXPECT_EQ(app->pod_key, "default/multi");
  EXPECT_EQ(app->container, "app");
  EXPECT_EQ(app->cards[0].index, 1);
  auto sidecar = m.allocate(1);
  ASSERT_TRUE(sidecar.ok());
  EXPECT_EQ(sidecar->container, "sidecar");
  auto other = m.allocate(1);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->pod_key, "default/other");
}

TEST(AllocationMatcher, EquivalentPodsShareTheAnswerOldestFirst) {
  // Two replicas of one Deployment on the same card with the same share:
  // whichever kubelet admits gets exactly what the record says.
  AllocationMatcher m;
  m.set_pods({pod("r2", "2026-01-01T00:00:02Z", {{ctr("c", 1), {share(1, 4096, 250)}}}),
              pod("r1", "2026-01-01T00:00:01Z", {{ctr("c", 1), {share(1, 4096, 250)}}})});
  auto a = m.allocate(1);
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(a->pod_key, "default/r1");
  auto b = m.allocate(1);
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ(b->pod_key, "default/r2");
  EXPECT_EQ(a->cards, b->cards);
}

TEST(AllocationMatcher, IdenticalRequestsOnDifferentCardsGoInTheOrderTheirBindsArrived) {
  // The hard case (../shared/reference/node-side.md §B2): the same request, different cards
  // (a burst of pods created together). kubelet admits pods in the order
  // their binds reach it, which is the order the agent's own watch saw
  // them bound, not their names' order.
  AllocationMatcher m;
  WaitingPod x = pod("x", "2026-01-01T00:00:00Z", {{ctr("c", 1), {share(0, 4096, 250)}}});
  WaitingPod y = pod("y", "2026-01-01T00:00:00Z", {{ctr("c", 1), {share(1, 4096, 250)}}});
  WaitingPod z = pod("z", "2026-01-01T00:00:00Z", {{ctr("c", 1), {share(2, 4096, 250)}}});
  x.arrival = 3;
  y.arrival = 5;
  z.arrival = 4;
  m.set_pods({x, y, z});
  for (const char* want : {"default/x", "default/z", "default/y"}) {
    auto a = m.allocate(1);
    ASSERT_TRUE(a.ok()) << a.message();
    EXPECT_EQ(a->pod_key, want);
  }
}

TEST(AllocationMatcher, AnOlderPodBoundLaterOnOtherCardsIsRefusedNotGuessed) {
  // kubelet sorts pods that reach it together (its own relist) by age: the
  // older pod bound second could be the one it admits.
  AllocationMatcher m;
  WaitingPod young = pod("young", "2026-01-01T00:00:05Z", {{ctr("c", 1), {share(0, 4096, 250)}}});
  WaitingPod old = pod("old", "2026-01-01T00:00:01Z", {{ctr("c", 1), {share(1, 4096, 250)}}});
  young.arrival = 1;
  old.arrival = 2;
  m.set_pods({young, old});
  auto a = m.allocate(1);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.message().find("2 pods (bound in the other order than created) each wait"), std::string::npos) << a.message();
  // On the same card with the same share, either answer is right.
  WaitingPod twin = pod("old", "2026-01-01T00:00:01Z", {{ctr("c", 1), {share(0, 4096, 250)}}});
  twin.arrival = 2;
  m.set_pods({young, twin});
  auto b = m.allocate(1);
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ(b->pod_key, "default/young");
}

TEST(AllocationMatcher, AfterKubeletRestartsThePodsBoundBeforeHaveNoOrder) {
  AllocationMatcher m;
  WaitingPod x = pod("x", "2026-01-01T00:00:00Z", {{ctr("c", 1), {share(0, 4096, 250)}}});
  WaitingPod y = pod("y", "2026-01-01T00:00:00Z", {{ctr("c", 1), {share(1, 4096, 250)}}});
  x.arrival = 1;
  y.arrival = 2;
  m.set_pods({x, y});
  m.merge_arrivals();
  EXPECT_FALSE(m.peek(1).ok());
  // A pod bound after the restart comes after them; once they are gone it is certain.
  WaitingPod z = pod("z", "2026-01-01T00:00:00Z", {{ctr("c", 1), {share(2, 4096, 250)}}});
  z.arrival = 3;
  m.set_pods({z});
  auto a = m.allocate(1);
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(a->pod_key, "default/z");
}

TEST(AllocationMatcher, IdenticalRequestsOnDifferentCardsSeenTogetherAreRefusedNotGuessed) {
  // Seen first in one list (the agent's start): no order is known.
  // Guessing would run one pod on the other's card while the ledger says
  // otherwise; when one leaves, the wrong card is freed.
  AllocationMatcher m;
  m.set_pods({pod("x", "2026-01-01T00:00:01Z", {{ctr("c", 1), {share(0, 4096, 250)}}}),
              pod("y", "2026-01-01T00:00:01Z", {{ctr("c", 1), {share(1, 4096, 250)}}})});
  auto a = m.allocate(1);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.message().find("2 pods were seen bound together and each wait for a container asking 1 device on different cards"), std::string::npos)
      << a.message();
  EXPECT_FALSE(m.lacks_candidate(1));  // no pod event will settle it: answered at once
  // Once one has started (gone from the waiting pods), the other is certain.
  m.set_pods({pod("y", "2026-01-01T00:00:01Z", {{ctr("c", 1), {share(1, 4096, 250)}}})});
  auto b = m.allocate(1);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->pod_key, "default/y");
}

WaitingPod unusable(const std::string& name, uint64_t arrival, const std::string& why) {
  WaitingPod bad;
  bad.uid = "uid-" + name;
  bad.key = "team-b/" + name;
  bad.creation_timestamp = "2026-01-01T00:00:00Z";
  bad.arrival = arrival;
  bad.containers = {ctr("c", 1)};
  bad.cards = Error{why};
  return bad;
}

TEST(AllocationMatcher, APodWithoutAUsableRecordIsRefusedInItsTurnNamedNeverServed) {
  AllocationMatcher m;
  m.set_pods({unusable("bad", 1, "annotation fracpack.io/allocation: expected a JSON object")});
  EXPECT_FALSE(m.lacks_candidate(1)) << "its turn: refused at once, not waited on";
  auto a = m.allocate(1);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.message().find("kubelet is admitting the pod bound to this node first"), std::string::npos) << a.message();
  EXPECT_NE(a.message().find("annotation fracpack.io/allocation: expected a JSON object"), std::string::npos) << a.message();
  // kubelet fails it; until its status says so it still looks waiting,
  // and is passed over.
  EXPECT_TRUE(m.lacks_candidate(1));
}

// Found on kubelet 1.20 (the real tier, test D): kubelet asked twice for
// a tenant's pod with a forged record, 2 ms apart, and failed the pod with
// the second answer, which said only that no pod waited.
TEST(AllocationMatcher, AskedAgainForAPodItRefusedTheSameRefusalIsAnswered) {
  AllocationMatcher m;
  m.set_pods({unusable("thief", 1, "annotation fracpack.io/allocation is not fracpack's")});
  auto first = m.allocate(1);
  ASSERT_FALSE(first.ok());
  auto again = m.allocate(1);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.message(), first.message());
  EXPECT_TRUE(m.lacks_candidate(1)) << "still no candidate: a pod bound meanwhile is waited for";
  // Another size: nothing to repeat.
  auto other = m.allocate(2);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.message().find("no pod bound to this node waits for a container asking 2 devices"), std::string::npos) << other.message();
  // Gone from the watch: forgotten.
  m.set_pods({});
  auto gone = m.allocate(1);
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.message().find("no pod bound to this node waits"), std::string::npos) << gone.message();
}

// Found on a real kubelet (issue 31): a tenant's pod created on the node
// with a forged record (no webhook), then a fracpack pod bound there.
// kubelet's Allocate for the tenant's pod came before the agent's watch
// showed the fracpack pod; the agent waited for a candidate, took the
// fracpack pod when it appeared, and served its cards to the tenant's
// container; the fracpack pod's own Allocate was then refused.
TEST(AllocationMatcher, AnUnservablePodsTurnIsNeverAnsweredWithTheNextPodsCards) {
  AllocationMatcher m;
  const WaitingPod thief = unusable("thief", 1, "annotation fracpack.io/allocation is not fracpack's");
  m.set_pods({thief});
  auto a = m.allocate(1);  // the thief's Allocate
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.message().find("its allocation record cannot serve: annotation fracpack.io/allocation is not fracpack's"), std::string::npos)
      << a.message();
  EXPECT_EQ(a.message().find("team-b/thief"), std::string::npos) << "names no pod (kubelet may show it to another's): " << a.message();
  // The fracpack pod is bound next (the thief's failed status not seen yet).
  WaitingPod mine = pod("mine", "2026-01-01T00:00:05Z", {{ctr("c", 1), {share(2, 1024, 100)}}});
  mine.arrival = 2;
  m.set_pods({thief, mine});
  auto b = m.allocate(1);
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ(b->pod_key, "default/mine");
  EXPECT_EQ(b->cards[0].index, 2);
  // Both waiting, the thief bound first: its turn comes first.
  AllocationMatcher n;
  n.set_pods({thief, mine});
  auto c = n.allocate(1);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.message().find("kubelet is admitting the pod bound to this node first"), std::string::npos) << c.message();
  auto d = n.allocate(1);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d->pod_key, "default/mine");
  // Seen together with a servable pod: no order, refused, nobody served.
  AllocationMatcher o;
  WaitingPod together = thief;
  together.arrival = 2;
  o.set_pods({together, mine});
  auto e = o.allocate(1);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.message().find("cannot tell which pod kubelet is admitting"), std::string::npos) << e.message();
}

TEST(AllocationMatcher, ARefusalEndsThePodsAdmission) {
  // kubelet fails a pod whose Allocate was refused: the next call begins
  // another pod, even one asking what the failed pod's next container asks.
  AllocationMatcher m;
  m.set_pods({pod("p", "2026-01-01T00:00:00Z",
                  {{ctr("a", 2), {share(0, 1024, 100), share(1, 1024, 100)}}, {ctr("b", 1), {share(5, 1024, 100)}}}),
              pod("q", "2026-01-01T00:00:03Z", {{ctr("c", 1), {share(2, 1024, 100)}}})});
  ASSERT_TRUE(m.allocate(2).ok());
  ASSERT_FALSE(m.allocate(3).ok());
  auto q = m.allocate(1);
  ASSERT_TRUE(q.ok()) << q.message();
  EXPECT_EQ(q->pod_key, "default/q");
  EXPECT_EQ(q->cards[0].index, 2);
}

TEST(AllocationMatcher, ServedCountsSurviveARestartAndForgetPodsGone) {
  AllocationMatcher m;
  m.set_pods({pod("a", "2026-01-01T00:00:00Z", {{ctr("c", 1), {share(0, 1024, 100)}}, {ctr("d", 1), {share(1, 1024, 100)}}})});
  ASSERT_TRUE(m.allocate(1).ok());
  AllocationMatcher restarted;
  restarted.restore(m.served(), m.last_uid());
  restarted.set_pods({pod("a", "2026-01-01T00:00:00Z", {{ctr("c", 1), {share(0, 1024, 100)}}, {ctr("d", 1), {share(1, 1024, 100)}}})});
  auto d = restarted.allocate(1);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->container, "d");
  restarted.set_pods({});
  EXPECT_TRUE(restarted.served().empty());
}

}  // namespace
}  // namespace fracpack::node::allocation_matcher_test
