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

// One pod asking 1 device on card `index` (512 MiB, 5 %), first seen
// bound `arrival`-th.
WaitingPod one_on(const std::string& name, const std::string& created, int index, uint64_t arrival) {
  WaitingPod p = pod(name, created, {{ctr("c", 1), {share(index, 512, 50)}}});
  p.arrival = arrival;
  return p;
}

// kubelet's Allocate of one device, the watch showing `shown`, the API
// server's list adding `listed`, arrivals merged up to `merged` (0: none).
Result<Assignment> allocate_one(const std::vector<WaitingPod>& shown, const std::vector<WaitingPod>& listed, uint64_t merged = 0) {
  AllocationMatcher m;
  m.set_pods(shown);
  if (merged > 0) m.merge_arrivals_upto(merged);
  m.add_unseen(listed);
  return m.allocate(1);
}

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
  AllocationMatcher n;
  WaitingPod twin = pod("old", "2026-01-01T00:00:01Z", {{ctr("c", 1), {share(0, 4096, 250)}}});
  twin.arrival = 2;
  n.set_pods({young, twin});
  auto b = n.allocate(1);
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
  // Once kubelet has failed one (its verdict in, the pod gone from the
  // waiting pods), the other is certain.
  m.verdict("uid-x");
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

// Found on the real tier (CI, 2026-11-27): kube-apiserver restarted amid a
// burst; kubelet relisted and got two pods at once, admitting the older
// first, while the agent's watch had shown only the younger (bound first).
// The pods the API server lists that the watch has not shown are rivals
// under the rule for a later-bound pod: an older one on other cards makes
// the choice ambiguous.
TEST(AllocationMatcher, AnOlderPodTheWatchHasNotShownYetMakesTheChoiceAmbiguous) {
  AllocationMatcher m;
  WaitingPod young = one_on("young", "2026-01-01T00:00:05Z", 2, 1);
  WaitingPod old = pod("old", "2026-01-01T00:00:01Z", {{ctr("c", 1), {share(0, 512, 50)}}});
  m.set_pods({young});
  // Without the list the agent's one candidate is served (what happened).
  ASSERT_TRUE(m.peek(1).ok());
  m.add_unseen({young, old});  // the list holds the watched pod too: not a rival of itself
  EXPECT_EQ(m.unseen(), 1u);
  auto a = m.allocate(1);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.message().find("2 pods (bound in the other order than created) each wait"), std::string::npos) << a.message();
  // Listed for that Allocate only: once kubelet's verdict on the refusal
  // is in (it failed `old`), `young` is served.
  m.forget_unseen();
  EXPECT_FALSE(m.peek(1).ok()) << "young may be the pod kubelet failed";
  m.verdict("uid-old");
  EXPECT_TRUE(m.peek(1).ok());
}

TEST(AllocationMatcher, AnUnseenPodCreatedInTheSameSecondIsARivalWhenKubeletMayHaveRelisted) {
  // kubelet's relist takes them together, ties in no set order; the watch
  // has shown only `shown` (bound first), while kubelet may relist (the
  // arrivals merged: the agent's own watch broke).
  WaitingPod shown = one_on("shown", "2026-01-01T00:00:05Z", 2, 1);
  WaitingPod tie = pod("tie", "2026-01-01T00:00:05Z", {{ctr("c", 1), {share(0, 512, 50)}}});
  {
    auto a = allocate_one({shown}, {tie}, /*merged=*/1);
    ASSERT_FALSE(a.ok()) << "answered " << a->pod_key;
    EXPECT_NE(a.message().find("bound in the other order than created"), std::string::npos) << a.message();
  }
  // `shown` arrived after the merged batch: its bind reached kubelet alone.
  {
    WaitingPod after = shown;
    after.arrival = 2;
    auto a = allocate_one({after}, {tie}, /*merged=*/1);
    ASSERT_TRUE(a.ok()) << a.message();
    EXPECT_EQ(a->pod_key, "default/shown");
  }
  // No relist in sight: the binds reach kubelet one by one, in the order
  // the watch shows them, and the list's `tie` was bound after `shown`.
  // (The project's CI, Real.A: four pods created in one second, the first
  // refused because the list showed the second bound before the watch did.)
  {
    auto a = allocate_one({shown}, {tie});
    ASSERT_TRUE(a.ok()) << a.message();
    EXPECT_EQ(a->pod_key, "default/shown");
  }
  // An older one the watch has not shown is a rival either way: kubelet
  // may have relisted on its own.
  {
    auto a = allocate_one({shown}, {pod("older", "2026-01-01T00:00:04Z", {{ctr("c", 1), {share(0, 512, 50)}}})});
    ASSERT_FALSE(a.ok()) << "answered " << a->pod_key;
  }
  {
    AllocationMatcher m;
    tie.arrival = 2;
    m.set_pods({shown, tie});
    auto a = m.allocate(1);
    ASSERT_TRUE(a.ok()) << a.message();
    EXPECT_EQ(a->pod_key, "default/shown");
  }
}

TEST(AllocationMatcher, AnUnseenPodIsARivalOnlyWhereKubeletCouldTakeItFirst) {
  WaitingPod young = one_on("young", "2026-01-01T00:00:05Z", 2, 1);
  // Younger: kubelet takes it after, however it got them.
  {
    auto a = allocate_one({young}, {pod("younger", "2026-01-01T00:00:09Z", {{ctr("c", 1), {share(0, 512, 50)}}})});
    ASSERT_TRUE(a.ok()) << a.message();
    EXPECT_EQ(a->pod_key, "default/young");
  }
  // Older but the same share on the same card: either answer is right.
  {
    auto a = allocate_one({young}, {pod("twin", "2026-01-01T00:00:01Z", {{ctr("c", 1), {share(2, 512, 50)}}})});
    ASSERT_TRUE(a.ok()) << a.message();
    EXPECT_EQ(a->pod_key, "default/young");
  }
  // Older, but asking another number of devices: not this Allocate's.
  EXPECT_TRUE(allocate_one({young}, {pod("pair", "2026-01-01T00:00:01Z", {{ctr("c", 2), {share(0, 512, 50), share(1, 512, 50)}}})}).ok());
  // Older, but the watch saw it leave (a lagging cache still lists it).
  {
    AllocationMatcher m;
    WaitingPod gone = one_on("gone", "2026-01-01T00:00:01Z", 0, 0);
    m.set_pods({gone, young});
    m.set_pods({young});
    m.add_unseen({gone});
    EXPECT_EQ(m.unseen(), 0u);
    EXPECT_TRUE(m.allocate(1).ok());
  }
  // Never served itself: what the agent serves is what its watch shows.
  {
    AllocationMatcher m;
    m.set_pods({});
    m.add_unseen({young});
    auto a = m.allocate(1);
    ASSERT_FALSE(a.ok());
    EXPECT_NE(a.message().find("no pod bound to this node waits"), std::string::npos) << a.message();
  }
  // The watch's next delivery replaces the list.
  {
    AllocationMatcher m;
    m.set_pods({young});
    m.add_unseen({pod("old", "2026-01-01T00:00:01Z", {{ctr("c", 1), {share(0, 512, 50)}}})});
    m.set_pods({young});
    EXPECT_EQ(m.unseen(), 0u);
  }
}

TEST(AllocationMatcher, AnAmbiguousRefusalNamesThePodsKubeletMayBeAdmitting) {
  AllocationMatcher m;
  WaitingPod young = one_on("young", "2026-01-01T00:00:05Z", 2, 1);
  WaitingPod old = one_on("old", "2026-01-01T00:00:01Z", 0, 2);
  WaitingPod younger = one_on("younger", "2026-01-01T00:00:09Z", 1, 3);
  m.set_pods({young, old, younger});
  ASSERT_FALSE(m.allocate(1).ok());
  using Pods = std::vector<std::pair<std::string, std::string>>;
  // kubelet admits young (binds one by one) or old (a batch, oldest first);
  // never younger.
  EXPECT_EQ(m.undecided(), (Pods{{"uid-young", "default/young"}, {"uid-old", "default/old"}}));
  EXPECT_EQ(m.verdicts_owed(), 1u);
  // Until kubelet's verdict, neither is served: young is next in turn.
  EXPECT_TRUE(m.awaits_verdict(1));
  EXPECT_FALSE(m.peek(1).ok());
  // kubelet failed old: young is next.
  m.verdict("uid-old");
  EXPECT_TRUE(m.undecided().empty());
  EXPECT_FALSE(m.awaits_verdict(1));
  auto a = m.allocate(1);
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(a->pod_key, "default/young");
  // One deleted meanwhile tells nothing: the other is still undecided.
  AllocationMatcher w;
  w.set_pods({young, old});
  ASSERT_FALSE(w.allocate(1).ok());
  ASSERT_EQ(w.undecided().size(), 2u);
  w.set_pods({old});
  EXPECT_EQ(w.undecided().size(), 2u) << "the watch showing one leave is not kubelet's verdict";
  w.drop_undecided("uid-young");
  EXPECT_EQ(w.undecided(), (Pods{{"uid-old", "default/old"}}));
  // old may be the pod kubelet failed: it is not served.
  auto refused = w.allocate(1);
  ASSERT_FALSE(refused.ok()) << "answered " << refused->pod_key;
  EXPECT_NE(refused.message().find("may be one kubelet failed on an earlier refusal"), std::string::npos) << refused.message();
}

TEST(AllocationMatcher, EveryAmbiguousRefusalOwesItsOwnVerdict) {
  // Two refusals, each of which kubelet may have failed either pod on: one
  // verdict leaves the other pod undecided, another refusal's verdict too.
  AllocationMatcher m;
  WaitingPod young = one_on("young", "2026-01-01T00:00:05Z", 1, 1);
  WaitingPod old = one_on("old", "2026-01-01T00:00:01Z", 0, 2);
  WaitingPod later = one_on("later", "2026-01-01T00:00:09Z", 0, 3);
  m.set_pods({young, old, later});
  using Pods = std::vector<std::pair<std::string, std::string>>;
  ASSERT_FALSE(m.allocate(1).ok());  // young or old
  EXPECT_EQ(m.undecided(), (Pods{{"uid-young", "default/young"}, {"uid-old", "default/old"}}));
  // young is next in turn and may be dead: refused; were it dead, kubelet
  // was admitting another, any of those waiting.
  EXPECT_TRUE(m.awaits_verdict(1));
  ASSERT_FALSE(m.allocate(1).ok());
  EXPECT_EQ(m.verdicts_owed(), 2u);
  EXPECT_EQ(m.undecided().size(), 3u);
  m.verdict("uid-old");
  EXPECT_EQ(m.verdicts_owed(), 1u);
  EXPECT_EQ(m.undecided(), (Pods{{"uid-young", "default/young"}, {"uid-later", "default/later"}}));
  EXPECT_TRUE(m.awaits_verdict(1)) << "young may be the second refusal's";
  EXPECT_FALSE(m.peek(1).ok());
  m.verdict("uid-young");
  EXPECT_TRUE(m.undecided().empty());
  EXPECT_EQ(m.verdicts_owed(), 0u);
  auto a = m.allocate(1);
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(a->pod_key, "default/later");
  // Never more owed than pods left to pay: kubelet asking twice for one
  // pod is two refusals; once both pods are deleted nothing is owed, and
  // the next refusal owes one.
  AllocationMatcher r;
  r.set_pods({young, old});
  ASSERT_FALSE(r.allocate(1).ok());
  ASSERT_FALSE(r.allocate(1).ok());
  EXPECT_EQ(r.verdicts_owed(), 2u);
  r.drop_undecided("uid-young");
  EXPECT_EQ(r.verdicts_owed(), 1u) << "old may be dead";
  r.drop_undecided("uid-old");
  EXPECT_EQ(r.verdicts_owed(), 0u);
  WaitingPod fourth = one_on("fourth", "2026-01-01T00:00:00Z", 1, 4);  // bound after `later`, created before it
  r.set_pods({later, fourth});
  ASSERT_FALSE(r.allocate(1).ok());
  EXPECT_EQ(r.verdicts_owed(), 1u);
  r.verdict("uid-fourth");
  EXPECT_TRUE(r.undecided().empty());
  EXPECT_TRUE(r.peek(1).ok());
  // A verdict on a pod no refusal named pays nothing.
  AllocationMatcher n;
  n.set_pods({young, old, later});
  ASSERT_FALSE(n.allocate(1).ok());
  n.verdict("uid-later");
  EXPECT_EQ(n.verdicts_owed(), 1u);
}

}  // namespace
}  // namespace fracpack::node::allocation_matcher_test
