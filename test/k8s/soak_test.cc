// A randomized soak of the API side: pods created, scheduled (assume, then
// bind through the API with the allocation annotations), deleted and
// finished, while the fake server injects faults (dropped and expired
// watches, compacted history, 409/500/lost answers on bindings, 429s).
// No card is ever over-committed, in the ledger or in the annotations, and
// in the end the ledger equals the annotations.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "k8s/binding.h"
#include "k8s/reconciler.h"
#include "k8s/contract/fracpack.h"
#include "scheduling/fit.h"
#include "test/support/cluster_harness.h"

namespace fracpack::testing::soak_test {
namespace {

using json = nlohmann::json;

// Per-card sums of the bound pods' annotations exceed no card.
std::string annotations_overcommit(const FakeApiServer& s) {
  const AnnotatedUse use = annotated_use(s);
  if (!use.bad_records.empty()) return "bad record on " + use.bad_records.front();
  for (const auto& [card, u] : use.cards) {
    if (u.cores_milli > scheduling::kCardMilli || u.memory_mib > 16384) return card.first + " card " + std::to_string(card.second) + " over-committed";
  }
  return "";
}

// For a failure message: each over-committed card of the ledger, with the
// pods it charges (assumed or confirmed) and what the server says of them.
std::string explain_overcommit(Cluster& cluster) {
  k8s::ClusterState& state = cluster.state();
  const FakeApiServer& s = cluster.server();
  std::vector<std::string> names;
  std::string report = state.read([&](const scheduling::Ledger& l) {
    std::string out;
    for (const auto& [name, node] : l.nodes()) {
      for (size_t p = 0; p < node.use().size(); ++p) {
        if (node.use()[p].cores <= scheduling::kCardMilli && node.free_memory(p) >= 0) continue;
        const int index = node.cards()[p].index;
        out += name + " card " + std::to_string(index) + ":";
        for (const scheduling::PodRecord* r : node.pods()) {
          for (const auto& c : r->charges) {
            if (c.index != index) continue;
            const size_t slash = r->key.find('/');
            auto text = s.get("pods", r->key.substr(0, slash), r->key.substr(slash + 1));
            std::string server = "absent";
            if (text) {
              auto pod = k8s::parse_pod(*text, k8s::ContractNames{}.selection());
              server = pod ? (pod->meta.uid == r->uid ? "" : "another uid, ") + pod->phase + " on '" + pod->node_name + "'" : "?";
            }
            out += " " + r->key + (r->phase == scheduling::PodPhase::kAssumed ? " (assumed, " : " (confirmed, ") +
                   std::to_string(c.cores) + " milli; server: " + server + ")";
            names.push_back(r->key.substr(slash + 1));
          }
        }
        out += "\n";
      }
    }
    return out;
  });
  for (const auto& n : names) report += "what the pod informer delivered about " + n + ":\n" + cluster.pod_trace(n);
  return report;
}

TEST(Soak, ThousandsOfEventsWithFaultsNeverOvercommit) {
  Cluster c;
  const int kNodes = 20;
  for (int n = 0; n < kNodes; ++n) c.server().create("nodes", node_object("n" + std::to_string(n), 4, 16384));
  c.start();
  ASSERT_TRUE(Cluster::wait_for([&] { return c.state().ready(); }));
  k8s::ApiClient api(client_for(c.server()));
  std::mt19937_64 rng(20261121);
  std::vector<std::string> live;  // pod names created (some deleted since)
  int created = 0, bound = 0, bind_failures = 0, deleted = 0, finished = 0, faults = 0, unplaceable = 0;
  size_t reconciled = 0;
  static const scheduling::BestCardRanker kBest;
  const k8s::ContractNames names;
  for (int step = 0; step < 4000; ++step) {
    const int op = static_cast<int>(rng() % 100);
    if (step % 4 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // let the watches interleave
    if (op < 40) {
      // A new pod, scheduled at once.
      const std::string name = "p" + std::to_string(step);
      std::map<std::string, std::string> limits = {{"cpu", "1"}};
      if (rng() % 4 == 0) {
        limits["fracpack.io/gpu"] = std::to_string(1 + rng() % 2);
      } else {
        limits["fracpack.io/gpu-cores"] = std::to_string(10 * (1 + rng() % 9));
        if (rng() % 2) limits["fracpack.io/gpu-memory"] = std::to_string(1024 * (1 + rng() % 8));
      }
      const json stored = json::parse(c.server().create("pods", pod_object({name, "default", "", "Pending", limits, {}})));
      ++created;
      live.push_back(name);
      auto pod = k8s::parse_pod(stored.dump(), names.selection());
      auto req = k8s::FracpackContract(names).pod_request(*pod);
      ASSERT_TRUE(req.ok()) << req.message();
      // Choose: the first node (random order) that fits, in the ledger as it is.
      std::vector<int> order(kNodes);
      for (int i = 0; i < kNodes; ++i) order[static_cast<size_t>(i)] = i;
      std::shuffle(order.begin(), order.end(), rng);
      std::optional<scheduling::Allocation> chosen;
      c.state().read([&](const scheduling::Ledger& l) {
        for (int n : order) {
          const auto* node = l.node("n" + std::to_string(n));
          if (node == nullptr) continue;
          auto fit = scheduling::explain_fit(*req, *node, scheduling::FitOptions{false}, kBest);
          if (fit.fits) {
            chosen = scheduling::materialize(*req, *node, fit.picks);
            break;
          }
        }
        return 0;
      });
      if (!chosen) {
        ++unplaceable;  // would stay pending: take it away again
        c.server().remove("pods", "default", name);
        live.pop_back();
        continue;
      }
      const scheduling::PodFacts facts{req->uid, req->key(), req->cpu_milli, req->memory_bytes};
      if (!c.state().reservations().reserve(facts, fixed_choice(*chosen), scheduling::Clock::now()).ok()) {
        ++unplaceable;  // raced with the watch: no longer fits
        continue;
      }
      k8s::BindTarget t{"default", name, req->uid, chosen->node,
                        {{names.allocation, k8s::format_allocation(*chosen)}, {names.indices, k8s::format_indices(*chosen)}}, {}};
      auto r = k8s::post_binding(api, t);
      if (r.ok()) {
        c.state().reservations().settle(req->uid, k8s::Reservations::Settlement::kBindingAccepted);
        ++bound;
      } else {
        ++bind_failures;
        c.state().reservations().settle(req->uid, k8s::Reservations::Settlement::kNotBound);
      }
    } else if (op < 65 && !live.empty()) {
      const size_t i = rng() % live.size();
      c.server().remove("pods", "default", live[i]);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      ++deleted;
    } else if (op < 75 && !live.empty()) {
      const std::string& name = live[rng() % live.size()];
      c.server().update("pods", "default", name, [](const std::string& t) {
        json o = json::parse(t);
        o["status"]["phase"] = "Succeeded";
        return o.dump();
      });
      ++finished;
    } else if (rng() % 5 == 0) {  // faults: heavy, not continuous
      ++faults;
      Faults& f = c.server().faults();
      switch (rng() % 9) {
        case 0: c.server().close_watches(); break;
        case 1: f.drop_mid_event = 1; break;
        case 2: f.expire_watches = 1; c.server().close_watches(); break;
        case 3: f.conflict_bindings = 1; break;
        case 4: f.fail_bindings = 1; break;
        case 5: f.drop_binding_response = 1; break;
        case 6: f.throttle = 1; break;
        case 7: f.split_events = rng() % 2 == 0; f.batch_events = !f.split_events; break;
        default: if (rng() % 10 == 0) c.server().compact(); break;
      }
    }
    if (step % 50 == 0) {
      // As serve does every few seconds: resolve what the watch missed.
      reconciled += k8s::reconcile_assumptions(api, c.state(), std::chrono::milliseconds(100));
      ASSERT_EQ(c.state().read([](const auto& l) { return l.overcommitted_cards(); }), 0)
          << "step " << step << "\n" << explain_overcommit(c) << "annotations: " << annotations_overcommit(c.server());
      ASSERT_EQ(annotations_overcommit(c.server()), "") << "step " << step;
    }
  }
  // Quiesce: no more faults, no binds in flight. Pods that were created,
  // bound and deleted entirely inside a blind window of the informers (a
  // relist under throttling) leave assumptions no list can explain (resource
  // versions may not be ordered): the TTL reclaims them. After it, the
  // ledger must equal the annotations exactly.
  Faults& f = c.server().faults();
  f.split_events = f.batch_events = false;
  f.drop_mid_event = f.expire_watches = f.conflict_bindings = f.fail_bindings = f.throttle = f.drop_binding_response = 0;
  ASSERT_TRUE(Cluster::wait_for([&] { return c.state().ready() && c.pod_stats().resource_version == std::to_string(c.server().resource_version()); },
                                std::chrono::seconds(30)) ||
              true);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // What the reconciler (run periodically by `serve`) resolves with a GET,
  // then what only the TTL can.
  reconciled += k8s::reconcile_assumptions(api, c.state(), std::chrono::milliseconds(0));
  const size_t phantoms = c.state().reservations().release_expired(scheduling::Clock::now() + c.state().reservations().ttl());
  EXPECT_EQ(c.wait_consistent(std::chrono::seconds(30)), "");
  EXPECT_EQ(c.state().read([](const auto& l) { return l.overcommitted_cards(); }), 0);
  EXPECT_EQ(annotations_overcommit(c.server()), "");
  EXPECT_EQ(c.state().read([](const auto& l) { return l.assumed_count(); }), 0u);
  EXPECT_GT(bound, 500);
  EXPECT_GT(bind_failures, 10);
  EXPECT_GT(faults, 100);
  RecordProperty("created", created);
  RecordProperty("bound", bound);
  RecordProperty("bind_failures", bind_failures);
  RecordProperty("deleted", deleted);
  RecordProperty("finished", finished);
  RecordProperty("faults", faults);
  RecordProperty("unplaceable", unplaceable);
  RecordProperty("expired_by_ttl", static_cast<int>(phantoms));
  RecordProperty("reconciled", static_cast<int>(reconciled));
  EXPECT_EQ(phantoms, 0u) << "the reconciler resolves every assumption the watch missed";
  std::printf("soak: %d created, %d bound, %d bind failures, %d deleted, %d finished, %d faults, %d unplaceable, "
              "%llu pod relists, %zu assumptions resolved by the reconciler, %zu left to the TTL\n",
              created, bound, bind_failures, deleted, finished, faults, unplaceable,
              static_cast<unsigned long long>(c.pod_stats().relists), reconciled, phantoms);
}

}  // namespace
}  // namespace fracpack::testing::soak_test
