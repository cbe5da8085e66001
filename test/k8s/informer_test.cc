// The informers and the ledger sync against the fake API server: every
// fault switch ends with the ledger equal, field by field, to what the pods'
// annotations say.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <fstream>
#include <random>

#include "k8s/contract/fracpack.h"
#include "test/support/cluster_harness.h"

namespace fracpack::testing::informer_test {
namespace {

using json = nlohmann::json;

const std::string kGpu = "fracpack.io/gpu";
const std::string kCores = "fracpack.io/gpu-cores";
const std::string kAlloc = "fracpack.io/allocation";

// Two nodes and a few bound and pending pods.
void seed(FakeApiServer& s) {
  s.create("nodes", node_object("n1", 4));
  s.create("nodes", node_object("n2", 2));
  s.create("pods", pod_object({"a", "default", "n1", "Running", {{kGpu, "1"}, {kCores, "50"}, {"cpu", "2"}},
                               {{kAlloc, allocation_annotation("n1", {{0, 50}})}}}));
  s.create("pods", pod_object({"b", "default", "n1", "Running", {{kGpu, "2"}},
                               {{kAlloc, allocation_annotation("n1", {{1, 100}, {2, 100}}, 16384)}}}));
  s.create("pods", pod_object({"c", "ml", "n2", "Running", {{kGpu, "1"}, {kCores, "30"}},
                               {{kAlloc, allocation_annotation("n2", {{1, 30}})}}}));
  s.create("pods", pod_object({"pending", "ml", "", "Pending", {{kGpu, "1"}, {kCores, "20"}}, {}}));
  s.create("pods", pod_object({"cpu-only", "web", "n2", "Running", {{"cpu", "4"}}, {}}));
}

std::string set_phase(const std::string& text, const std::string& phase) {
  json o = json::parse(text);
  o["status"]["phase"] = phase;
  return o.dump();
}

TEST(Informer, InitialSyncThenEveryKindOfChange) {
  Cluster c;
  seed(c.server());
  c.start();
  ASSERT_EQ(c.wait_consistent(), "");
  EXPECT_TRUE(c.state().ready());
  EXPECT_EQ(c.state().read([](const auto& l) { return l.node("n1")->use()[0].cores; }), 500);
  EXPECT_EQ(c.state().read([](const auto& l) { return l.node("n2")->cpu_requested(); }), 4000);

  // A new bound pod, a deletion, a pod that finishes, a pod re-created under
  // the same name (a new UID).
  c.server().create("pods", pod_object({"d", "default", "n2", "Running", {{kGpu, "1"}, {kCores, "40"}},
                                        {{kAlloc, allocation_annotation("n2", {{1, 40}})}}}));
  c.server().remove("pods", "default", "a");
  c.server().update("pods", "ml", "c", [](const std::string& t) { return set_phase(t, "Succeeded"); });
  ASSERT_EQ(c.wait_consistent(), "");
  EXPECT_EQ(c.state().read([](const auto& l) { return l.node("n2")->use()[1].cores; }), 400);
  EXPECT_EQ(c.state().read([](const auto& l) { return l.node("n1")->use()[0].cores; }), 0);

  c.server().remove("pods", "default", "d");
  c.server().create("pods", pod_object({"d", "default", "n2", "Running", {{kGpu, "1"}, {kCores, "10"}},
                                        {{kAlloc, allocation_annotation("n2", {{0, 10}})}}}));
  ASSERT_EQ(c.wait_consistent(), "");
  // Node changes: a node gains cards; a node is deleted.
  c.server().update("nodes", "", "n2", [](const std::string&) { return node_object("n2", 4); });
  c.server().create("nodes", node_object("n3", 8));
  ASSERT_TRUE(Cluster::wait_for([&] { return c.state().read([](const auto& l) { return l.node("n3") != nullptr; }); }));
  EXPECT_EQ(c.state().read([](const auto& l) { return l.node("n2")->cards().size(); }), 4u);
  c.server().remove("nodes", "", "n3");
  ASSERT_TRUE(Cluster::wait_for([&] { return c.state().read([](const auto& l) { return l.node("n3") == nullptr; }); }));
  ASSERT_EQ(c.wait_consistent(), "");
  EXPECT_GE(c.pod_stats().events, 5u);
}

// Each fault switch of the fake server, then more changes, then consistency.
class InformerFault : public ::testing::TestWithParam<std::string> {};

TEST_P(InformerFault, LedgerStaysEqualToTheAnnotations) {
  Cluster c;
  seed(c.server());
  c.start();
  ASSERT_EQ(c.wait_consistent(), "");
  Faults& f = c.server().faults();
  const std::string fault = GetParam();
  if (fault == "close-watch") {
    f.close_watches = 3;
    c.server().close_watches();
  } else if (fault == "drop-mid-event") {
    f.drop_mid_event = 1;
  } else if (fault == "split-events") {
    f.split_events = true;
  } else if (fault == "batch-events") {
    f.batch_events = true;
  } else if (fault == "410-next-watch") {
    f.expire_watches = 1;
    c.server().close_watches();
  } else if (fault == "history-compacted") {
    f.close_watches = 2;  // the informer is between watches while history goes
    c.server().close_watches();
  } else if (fault == "429") {
    f.throttle = 2;
    c.server().close_watches();
  } else if (fault == "slow") {
    f.slow_ms = 300;
    c.server().close_watches();
  }
  // Changes while the fault is active.
  for (int i = 0; i < 5; ++i) {
    c.server().create("pods", pod_object({"f" + std::to_string(i), "default", "n1", "Running",
                                          {{kGpu, "1"}, {kCores, "10"}},
                                          {{kAlloc, allocation_annotation("n1", {{3, 10}})}}}));
  }
  c.server().remove("pods", "default", "b");
  if (fault == "history-compacted") c.server().compact();
  if (fault == "batch-events") c.server().close_watches();
  ASSERT_EQ(c.wait_consistent(std::chrono::seconds(15)), "") << fault;
  // The one-shot faults must have fired.
  ASSERT_TRUE(Cluster::wait_for(
      [&] {
        return f.close_watches.load() == 0 && f.drop_mid_event.load() == 0 && f.expire_watches.load() == 0 &&
               f.throttle.load() == 0;
      },
      std::chrono::seconds(15)))
      << fault;
  f.split_events = false;
  f.batch_events = false;
  f.slow_ms = 0;
  // And it keeps following.
  c.server().remove("pods", "default", "f0");
  ASSERT_EQ(c.wait_consistent(), "") << fault;
  // The faults are the server's: either informer may have met them.
  // (history-compacted gives a 410 only if the informer was behind when the
  // history went: timing; the ledger check above is its point.)
  if (fault == "410-next-watch") {
    EXPECT_GE(c.all_stats().expired, 1u);
    EXPECT_TRUE(Cluster::wait_for([&] { return c.all_stats().relists >= 1; }))
        << "a 410 relists (after a backoff)";
  }
  if (fault == "429") {
    EXPECT_GE(c.all_stats().throttled, 1u);
  }
  if (fault == "close-watch") {
    // Counted when the request goes out: the last re-open may still be on
    // its way when the fault counter reaches 0 (seen on a loaded machine).
    EXPECT_TRUE(Cluster::wait_for([&] { return c.all_stats().watches >= 5; }))
        << "closed watches are re-opened";
  }
}

INSTANTIATE_TEST_SUITE_P(Faults, InformerFault,
                         ::testing::Values("close-watch", "drop-mid-event", "split-events", "batch-events",
                                           "410-next-watch", "history-compacted", "429", "slow"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (auto& ch : n) {
                             if (ch == '-') ch = '_';
                           }
                           return n;
                         });

// Lists are paginated as client-go's pager does: every page carries the
// limit (a continue page without it would get the whole rest at once), and
// only the first page names a resource version. A watch cache serves RV "0"
// whole.
TEST(Informer, PaginatesListsLikeThePager) {
  for (const bool watch_cache : {false, true}) {
    SCOPED_TRACE(watch_cache ? "watch cache" : "paginated");
    FakeApiServerOptions options;
    options.watch_cache = watch_cache;
    Cluster c(options);
    seed(c.server());
    for (int i = 0; i < 120; ++i) {
      c.server().create("pods", pod_object({"p" + std::to_string(i), "bulk", "n1", "Running", {{"cpu", "10m"}}, {}}));
    }
    c.start();  // page size 50
    ASSERT_EQ(c.wait_consistent(), "");
    std::vector<std::string> pod_lists;
    for (const auto& r : c.server().request_log()) {
      if (r.rfind("GET /api/v1/pods?", 0) == 0 && r.find("watch=true") == std::string::npos) pod_lists.push_back(r);
    }
    const size_t pods = c.server().list("pods").size();
    ASSERT_GT(pods, 100u);
    ASSERT_EQ(pod_lists.size(), watch_cache ? 1u : (pods + 49) / 50) << ::testing::PrintToString(pod_lists);
    for (size_t i = 0; i < pod_lists.size(); ++i) {
      EXPECT_NE(pod_lists[i].find("limit=50"), std::string::npos) << pod_lists[i];
      EXPECT_EQ(pod_lists[i].find("resourceVersion="), i == 0 ? pod_lists[i].find("resourceVersion=0") : std::string::npos)
          << pod_lists[i];
      EXPECT_EQ(pod_lists[i].find("continue=") != std::string::npos, i > 0) << pod_lists[i];
    }
    EXPECT_EQ(c.state().read([](const auto& l) { return l.pod_count(); }), pods - 1);  // "pending" holds nothing
  }
}

// A list far larger than the decode pipeline holds (batches of 512 KB, four
// in flight) reaches the sink whole and in order, on the worker thread, and
// on the informer's own thread when the pipeline is off.
TEST(Informer, LargeListsCrossTheDecodeThreadInOrder) {
  struct RecordingSink : k8s::InformerSink {
    std::vector<std::string> names;
    std::thread::id begin_thread, item_thread;
    std::atomic<bool> listed{false};
    bool items_after_end = false;
    void begin_list(bool) override {
      names.clear();
      begin_thread = std::this_thread::get_id();
    }
    Status list_item(std::string_view text) override {
      if (listed) items_after_end = true;
      item_thread = std::this_thread::get_id();
      names.push_back(json::parse(text)["metadata"]["name"]);
      return Status::Ok();
    }
    void end_list(const std::string&) override { listed = true; }
    void abort_list() override {}
    Result<std::string> event(k8s::WatchEventType, std::string_view) override { return std::string(); }
  };
  FakeApiServer server;
  const std::string padding(3000, 'x');
  for (int i = 0; i < 2000; ++i) {
    server.create("pods", pod_object({"p" + std::to_string(i), "bulk", "n1", "Running", {}, {{"note", padding}}}));
  }
  for (const bool threaded : {true, false}) {
    RecordingSink sink;
    k8s::InformerOptions o = fast_informer("/api/v1/pods");
    o.decode_thread = threaded;
    k8s::Informer informer(client_for(server), o, sink);
    std::jthread t([&](std::stop_token st) { informer.run(st); });
    ASSERT_TRUE(Cluster::wait_for([&] { return sink.listed.load(); }));
    t = {};
    ASSERT_EQ(sink.names.size(), 2000u);
    std::vector<std::string> sorted = sink.names;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::string> from_server;
    for (const auto& text : server.list("pods")) from_server.push_back(json::parse(text)["metadata"]["name"]);
    std::sort(from_server.begin(), from_server.end());
    EXPECT_EQ(sorted, from_server);
    EXPECT_FALSE(sink.items_after_end);
    EXPECT_EQ(sink.item_thread != sink.begin_thread, threaded);
  }
}

TEST(Informer, RelistReplacesTheStore) {
  Cluster c;
  seed(c.server());
  c.start();
  ASSERT_EQ(c.wait_consistent(), "");
  // Watches keep failing at once while a pod disappears and the history is
  // compacted: only a relist can notice the deletion.
  c.server().faults().close_watches = 1000;
  c.server().close_watches();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  c.server().remove("pods", "default", "b");
  c.server().remove("nodes", "", "n2");
  c.server().compact();
  c.server().faults().close_watches = 0;
  ASSERT_EQ(c.wait_consistent(std::chrono::seconds(15)), "");
  EXPECT_GE(c.pod_stats().relists, 1u);
  EXPECT_EQ(c.state().read([](const auto& l) { return l.node("n1")->use()[1].cores; }), 0);
  EXPECT_TRUE(c.state().read([](const auto& l) { return l.node("n2") == nullptr || !l.node("n2")->present(); }));
}

// A second informer started against the same state rebuilds the same ledger.
TEST(Informer, RestartRebuildsTheSameLedger) {
  Cluster c;
  seed(c.server());
  for (int i = 0; i < 30; ++i) {
    c.server().create("pods", pod_object({"r" + std::to_string(i), "default", i % 2 ? "n1" : "n2", "Running",
                                          {{kGpu, "1"}, {kCores, "5"}},
                                          {{kAlloc, allocation_annotation(i % 2 ? "n1" : "n2", {{i % 2 ? 3 : 0, 5}})}}}));
  }
  c.start();
  ASSERT_EQ(c.wait_consistent(), "");
  auto dump = [](const k8s::ClusterState& s) {
    return s.read([](const scheduling::Ledger& l) {
      std::string out;
      for (const auto& [name, node] : l.nodes()) {
        out += name + ":";
        for (const auto& u : node.use()) out += std::to_string(u.cores) + "/" + std::to_string(u.memory_mib) + "/" + std::to_string(u.sharers) + ",";
        out += std::to_string(node.cpu_requested()) + ";";
      }
      return out + std::to_string(l.pod_count());
    });
  };
  const std::string first = dump(c.state());
  c.start();  // a new ClusterState and informers: a restart
  ASSERT_EQ(c.wait_consistent(), "");
  EXPECT_EQ(dump(c.state()), first);
}

TEST(Informer, AuthenticatesOverTlsAndRereadsTheTokenAfter401) {
  const TestCertificate cert = make_test_certificate();
  FakeApiServerOptions o;
  o.tls = true;
  o.cert_pem = cert.cert_pem;
  o.key_pem = cert.key_pem;
  o.token = "secret-1";
  Cluster c(o);
  seed(c.server());
  const std::string token_path = ::testing::TempDir() + "/fracpack-token";
  {
    std::ofstream(token_path) << "secret-1\n";
  }
  k8s::ClientConfig client = client_for(c.server());
  client.tls.ca_pem = cert.cert_pem;
  client.token = k8s::TokenSource::file(token_path);
  c.start(client);
  ASSERT_EQ(c.wait_consistent(), "");
  const int reads = client.token->reads();
  c.server().faults().unauthorized = 1;
  c.server().close_watches();
  c.server().create("pods", pod_object({"t", "default", "n2", "Running", {{kGpu, "1"}, {kCores, "10"}},
                                        {{kAlloc, allocation_annotation("n2", {{0, 10}})}}}));
  ASSERT_EQ(c.wait_consistent(), "");
  ASSERT_TRUE(Cluster::wait_for([&] { return c.server().faults().unauthorized.load() == 0; })) << "the 401 was served";
  EXPECT_TRUE(Cluster::wait_for([&] { return client.token->reads() > reads; }))
      << "a 401 makes the next request re-read the token file";
  // A rotated token is picked up the same way.
  {
    std::ofstream(token_path) << "secret-1\n";
  }
  ASSERT_EQ(c.wait_consistent(), "");
}

TEST(Informer, RefusesAServerWhoseCertificateIsNotTrusted) {
  const TestCertificate cert = make_test_certificate();
  const TestCertificate other = make_test_certificate();
  FakeApiServerOptions o;
  o.tls = true;
  o.cert_pem = cert.cert_pem;
  o.key_pem = cert.key_pem;
  FakeApiServer server(o);
  k8s::ClientConfig client = client_for(server);
  client.tls.ca_pem = other.cert_pem;
  k8s::ApiClient api(client);
  auto r = api.request("GET", "/version");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("TLS handshake"), std::string::npos) << r.message();
  client.tls.ca_pem = cert.cert_pem;
  k8s::ApiClient trusted(client);
  auto ok = trusted.request("GET", "/version");
  ASSERT_TRUE(ok.ok()) << ok.message();
  EXPECT_EQ(ok->status, 200);
}

TEST(Informer, FailsClosedOnBadRecordsAndNodes) {
  Cluster c;
  c.server().create("nodes", node_object("n1", 4));
  c.server().create("nodes", node_object("n2", 2));
  c.server().create("nodes", node_object("n3", 2));
  // A malformed record, but a usable gpu-indices: charged on card 2.
  c.server().create("pods", pod_object({"bad-record", "default", "n1", "Running", {{kGpu, "1"}, {kCores, "50"}},
                                        {{kAlloc, "{not json"}, {"fracpack.io/gpu-indices", "2"}}}));
  // No record at all (bound by someone else): charged where it would go now.
  c.server().create("pods", pod_object({"no-record", "default", "n2", "Running", {{kGpu, "2"}}, {}}));
  // Unreadable resources: its GPUs cannot be known, node n3 closes.
  c.server().create("pods", pod_object({"unreadable", "default", "n3", "Running", {{kGpu, "1"}, {kCores, "500"}}, {}}));
  c.start();
  ASSERT_TRUE(Cluster::wait_for([&] { return c.state().ready(); }));
  ASSERT_TRUE(Cluster::wait_for([&] { return c.state().counters().inferred_allocations >= 2; }));
  c.state().read([](const scheduling::Ledger& l) {
    EXPECT_EQ(l.node("n1")->use()[2].cores, 500);
    EXPECT_EQ(l.node("n2")->use()[0].cores + l.node("n2")->use()[1].cores, 2000);
    for (const auto& card : l.node("n3")->cards()) EXPECT_TRUE(card.cordoned) << "n3 takes no new placement";
    for (const auto& card : l.node("n1")->cards()) EXPECT_FALSE(card.cordoned);
    return 0;
  });
  EXPECT_GE(c.state().counters().malformed_pods, 2u);
  // The unreadable pod goes: its node opens again.
  c.server().remove("pods", "default", "unreadable");
  ASSERT_TRUE(Cluster::wait_for([&] {
    return c.state().read([](const auto& l) { return !l.node("n3")->cards()[0].cordoned; });
  }));
  // A node whose device annotation breaks keeps its cards, cordoned.
  c.server().update("nodes", "", "n1", [](const std::string& t) {
    json o = json::parse(t);
    o["metadata"]["annotations"]["fracpack.io/gpu-devices"] = "[{broken";
    return o.dump();
  });
  ASSERT_TRUE(Cluster::wait_for([&] {
    return c.state().read([](const auto& l) { return l.node("n1")->cards()[0].cordoned; });
  }));
  EXPECT_EQ(c.state().read([](const auto& l) { return l.node("n1")->use()[2].cores; }), 500) << "charges stay";
  EXPECT_GE(c.state().counters().malformed_nodes, 1u);
  bool mentioned = false;
  for (const auto& p : c.state().problems()) mentioned |= p.object == "node n1" && p.message.find("gpu-devices") != std::string::npos;
  EXPECT_TRUE(mentioned);
}

TEST(Informer, AssumedReservationsAreConfirmedOrExpire) {
  Cluster c;
  c.server().create("nodes", node_object("n1", 2));
  c.server().create("pods", pod_object({"p", "default", "", "Pending", {{kGpu, "1"}, {kCores, "60"}}, {}}));
  c.start();
  ASSERT_TRUE(Cluster::wait_for([&] { return c.state().ready() && c.state().pod_by_name("default", "p").has_value(); }));
  const auto pod = *c.state().pod_by_name("default", "p");
  scheduling::Allocation a{"n1", {{"main", false, {{1, "", 0, 600}}}}};
  const auto t0 = scheduling::Clock::now();
  ASSERT_TRUE(c.state().reservations().reserve({pod.meta.uid, "default/p", 0, 0}, fixed_choice(a), t0).ok());
  // The same capacity cannot be taken twice.
  EXPECT_FALSE(c.state().reservations().reserve({"other", "default/q", 0, 0}, fixed_choice(scheduling::Allocation{"n1", {{"main", false, {{1, "", 0, 600}}}}}), t0).ok());
  // The bind lands: the watch confirms it.
  c.server().update("pods", "default", "p", [&](const std::string& t) {
    json o = json::parse(t);
    o["spec"]["nodeName"] = "n1";
    o["metadata"]["annotations"][kAlloc] = k8s::format_allocation(a);
    return o.dump();
  });
  ASSERT_TRUE(Cluster::wait_for([&] {
    return c.state().read([&](const auto& l) {
      const auto* r = l.pod(pod.meta.uid);
      return r != nullptr && r->phase == scheduling::PodPhase::kConfirmed;
    });
  }));
  EXPECT_EQ(c.state().reservations().release_expired(t0 + std::chrono::hours(1)), 0u) << "confirmed pods never expire";
  // An assumption that is never confirmed expires after the TTL.
  c.server().create("pods", pod_object({"q", "default", "", "Pending", {{kGpu, "1"}, {kCores, "30"}}, {}}));
  ASSERT_TRUE(c.state().reservations().reserve({"uid-q", "default/q", 0, 0}, fixed_choice(scheduling::Allocation{"n1", {{"main", false, {{0, "", 0, 300}}}}}), t0).ok());
  EXPECT_EQ(c.state().reservations().release_expired(t0 + std::chrono::seconds(29)), 0u);
  EXPECT_EQ(c.state().reservations().release_expired(t0 + std::chrono::seconds(31)), 1u);
  EXPECT_EQ(c.state().read([](const auto& l) { return l.node("n1")->use()[0].cores; }), 0);
}

}  // namespace
}  // namespace fracpack::testing::informer_test
