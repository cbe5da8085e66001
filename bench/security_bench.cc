// What tenant safety costs (README "Security model"):
//
//   1. per record: signing (a bind), the extender's check of its own record
//      (the MAC), an agent's check (Ed25519), the webhook's decision;
//   2. the ledger applying the bound pods of a restart: records verified
//      (the MAC path, what `serve` does), verified by signature alone (as if
//      no MAC), taken as written (security.records: unsigned);
//   3. the webhook over TLS as kube-apiserver calls it: one keep-alive
//      connection per client, reviews allowed and denied in turn, p50/p99.
//
// Medians over --rounds rounds. The end-to-end bind and filter cost with
// signing on and off: extender_bench --only-e2e --records signed|unsigned.
//
//   build/bench/security_bench [--rounds 5] [--pods 20000] [--reviews 4000] [--clients 1,4]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "k8s/admission.h"
#include "k8s/cluster_state.h"
#include "k8s/contract/fracpack.h"
#include "k8s/record_signature.h"
#include "server/daemon.h"
#include "server/log.h"
#include "test/support/cluster_harness.h"
#include "test/support/fake_apiserver.h"
#include "test/support/record_keys.h"
#include "test/support/server_fixture.h"

namespace {

using namespace fracpack;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

template <class Fn>
double micros_per_op(int n, Fn&& fn) {
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) fn(i);
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n;
}

const std::vector<std::string> kKeys = {"fracpack.io/allocation", "fracpack.io/gpu-indices"};

std::string record_of(int i) {
  return R"({"node":"n-)" + std::to_string(i % 500) + R"(","containers":[{"name":"main","cards":[{"index":)" + std::to_string(i % 8) +
         R"(,"uuid":"","memoryMiB":8192,"cores":25}]}]})";
}

// A bound pod "ml/p<i>" asking a quarter card, its record signed.
k8s::Pod bound_pod(int i) {
  k8s::Pod p;
  p.meta.name = "p" + std::to_string(i);
  p.meta.namespace_name = "ml";
  p.meta.uid = "uid-" + std::to_string(i);
  p.node_name = "n-" + std::to_string(i % 500);
  p.scheduler_name = "fracpack";
  p.phase = "Running";
  k8s::Container c;
  c.name = "main";
  c.limits = {{"cpu", "1"}, {"fracpack.io/gpu-cores", "25"}, {"fracpack.io/gpu-memory", "8192"}};
  c.requests = c.limits;
  p.containers = {c};
  p.meta.annotations = {{"fracpack.io/allocation", record_of(i)}, {"fracpack.io/gpu-indices", std::to_string(i % 8)}};
  p.meta.annotations.emplace_back(std::string(k8s::kRecordSignatureAnnotation),
                                  testing::test_signer()->sign(k8s::record_message(p.meta.uid, p.node_name, kKeys, p.meta.annotations)));
  return p;
}

void per_record(int rounds) {
  const auto signer = testing::test_signer();
  const k8s::RecordTrust own = testing::test_trust();
  k8s::RecordVerifier agent;
  (void)agent.add_pem(signer->public_pem(), "public");
  std::vector<std::string> messages;
  for (int i = 0; i < 2000; ++i) messages.push_back(k8s::record_message("uid-" + std::to_string(i), "n-1", kKeys, {{"fracpack.io/allocation", record_of(i)}}));
  std::vector<std::string> sigs;
  for (const auto& m : messages) sigs.push_back(signer->sign(m));
  const k8s::AdmissionPolicy policy{k8s::FracpackContract{}.guarded_annotations(), k8s::FracpackContract{}.pod_resources(),
                                    {"system:serviceaccount:fracpack-system:fracpack"}, {"fracpack"}, {},
                                    true, scheduling::CardIsolation::kMps, k8s::FracpackContract{}.device_resource()};
  const std::string review = json{{"apiVersion", "admission.k8s.io/v1"},
                                  {"kind", "AdmissionReview"},
                                  {"request",
                                   {{"uid", "r"},
                                    {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                                    {"operation", "CREATE"},
                                    {"userInfo", {{"username", "alice"}}},
                                    {"object", json::parse(testing::gpu_pod("p", "u-p", 50))}}}}
                                 .dump();
  std::vector<double> sign, mac, ed, decide;
  for (int r = 0; r < rounds; ++r) {
    sign.push_back(micros_per_op(2000, [&](int i) { (void)signer->sign(messages[static_cast<size_t>(i)]); }));
    mac.push_back(micros_per_op(2000, [&](int i) { (void)own.verifier->verify(messages[static_cast<size_t>(i)], sigs[static_cast<size_t>(i)]); }));
    ed.push_back(micros_per_op(2000, [&](int i) { (void)agent.verify(messages[static_cast<size_t>(i)], sigs[static_cast<size_t>(i)]); }));
    decide.push_back(micros_per_op(2000, [&](int) { (void)k8s::review_admission(review, policy); }));
  }
  std::printf("per record (median of %d rounds of 2000): sign %.1f us, extender's check (MAC) %.2f us, agent's check (Ed25519) %.1f us, "
              "webhook decision %.1f us\n",
              rounds, median(sign), median(mac), median(ed), median(decide));
}

void ledger_apply(int rounds, int pods) {
  std::vector<k8s::Pod> bound;
  for (int i = 0; i < pods; ++i) bound.push_back(bound_pod(i));
  std::vector<k8s::Node> nodes;
  for (int n = 0; n < 500; ++n) nodes.push_back(testing::decoded_node("n-" + std::to_string(n), 8));
  k8s::RecordVerifier public_only;
  (void)public_only.add_pem(testing::test_signer()->public_pem(), "public");
  auto signature_only = std::make_shared<const k8s::RecordVerifier>(std::move(public_only));
  struct Arm {
    const char* what;
    k8s::RecordTrust trust;
    std::vector<double> ms;
  };
  std::vector<Arm> arms = {{"verified (MAC)", testing::test_trust(), {}},
                           {"verified by signature alone", k8s::RecordTrust{signature_only, ""}, {}},
                           {"taken as written", k8s::RecordTrust{}, {}}};
  for (int r = 0; r < rounds; ++r) {
    for (Arm& a : arms) {
      k8s::SyncOptions so;
      so.trust = a.trust;
      k8s::ClusterState state(so);
      for (const auto& n : nodes) state.apply_node(n);
      const auto t0 = Clock::now();
      for (const auto& p : bound) state.apply_pod(p);
      a.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      if (state.counters().rejected_records != 0) std::fprintf(stderr, "%s: %llu records rejected\n", a.what, static_cast<unsigned long long>(state.counters().rejected_records));
    }
  }
  std::printf("ledger, %d bound pods applied (a restart's list), median of %d:", pods, rounds);
  for (const Arm& a : arms) std::printf("  %s %.0f ms;", a.what, median(a.ms));
  std::printf("\n");
}

void webhook(int reviews, const std::vector<int>& client_counts) {
  testing::TempDir certs;
  const testing::TestCertificate cert = testing::make_test_certificate("127.0.0.1");
  config::Config c = testing::test_config();
  c.admission.listen = "127.0.0.1:0";
  c.admission.cert_file = certs.write("w.crt", cert.cert_pem);
  c.admission.key_file = certs.write("w.key", cert.key_pem);
  testing::Standalone s({testing::node_object("n1", 1)}, c);
  const std::string base = "https://127.0.0.1:" + std::to_string(s.daemon().admission_port());
  auto body = [](bool forged) {
    std::map<std::string, std::string> ann;
    if (forged) ann["fracpack.io/allocation"] = "{}";
    return json{{"apiVersion", "admission.k8s.io/v1"},
                {"kind", "AdmissionReview"},
                {"request",
                 {{"uid", "r"},
                  {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                  {"operation", "CREATE"},
                  {"userInfo", {{"username", "alice"}}},
                  {"object", json::parse(testing::gpu_pod("p", "u-p", 50, 0, 1, ann))}}}}
        .dump();
  };
  const std::string allowed = body(false), denied = body(true);
  for (int clients : client_counts) {
    std::vector<std::vector<double>> ms(static_cast<size_t>(clients));
    std::atomic<int> errors{0};
    std::vector<std::thread> threads;
    const auto t0 = Clock::now();
    for (int k = 0; k < clients; ++k) {
      threads.emplace_back([&, k] {
        k8s::ClientConfig cc;
        cc.endpoint = *k8s::Endpoint::parse(base);
        cc.tls.ca_pem = cert.cert_pem;
        k8s::ApiClient client(cc);
        for (int i = 0; i < reviews / clients; ++i) {
          const auto sent = Clock::now();
          auto r = client.request("POST", "/validate", i % 2 ? denied : allowed);
          if (!r || r->status != 200) ++errors;
          ms[static_cast<size_t>(k)].push_back(std::chrono::duration<double, std::milli>(Clock::now() - sent).count());
        }
      });
    }
    for (auto& t : threads) t.join();
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    std::vector<double> all;
    for (const auto& v : ms) all.insert(all.end(), v.begin(), v.end());
    std::printf("webhook over TLS, %d client(s) on keep-alive connections, %zu reviews (half denied): p50 %.3f ms p99 %.3f ms, %.0f reviews/s, "
                "errors %d\n",
                clients, all.size(), percentile(all, 0.5), percentile(all, 0.99), static_cast<double>(all.size()) / wall, errors.load());
  }
}

std::vector<int> int_list(const std::string& text) {
  std::vector<int> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    out.push_back(std::atoi(text.substr(start, comma - start).c_str()));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5, pods = 20000, reviews = 4000;
  std::vector<int> clients = {1, 4};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--rounds") rounds = std::atoi(v), ++i;
    else if (a == "--pods") pods = std::atoi(v), ++i;
    else if (a == "--reviews") reviews = std::atoi(v), ++i;
    else if (a == "--clients") clients = int_list(v), ++i;
    else {
      std::fprintf(stderr, "usage: security_bench [--rounds 5] [--pods 20000] [--reviews 4000] [--clients 1,4]\n");
      return 2;
    }
  }
  server::configure_log(server::LogLevel::kError, server::LogFormat::kLogfmt);
  per_record(rounds);
  ledger_apply(rounds, pods);
  webhook(reviews, clients);
  return 0;
}
