// manifests/grafana/fracpack-dashboard.json queries only metrics a running
// fracpack exports (kubernetes mode, after every verb has been used).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "test/support/server_fixture.h"
#include "test/support/testlib.h"

namespace fracpack::testing::dashboard_test {
namespace {

std::set<std::string> exported_metrics(const std::string& exposition) {
  std::set<std::string> out;
  static const std::regex type_line("^# TYPE (\\S+) (\\S+)$");
  static const std::regex sample("^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]");
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, type_line)) {
      out.insert(m[1]);
      if (m[2] == "histogram") {
        for (const char* s : {"_bucket", "_sum", "_count"}) out.insert(std::string(m[1]) + s);
      }
    } else if (std::regex_search(line, m, sample)) {
      out.insert(m[1]);
    }
  }
  return out;
}

TEST(Grafana, EveryDashboardMetricIsExported) {
  Connected c;
  c.api->create("nodes", node_object("n1", 2));
  // A quota with a limit and a malformed one: the fracpack_quota_* families have samples.
  c.api->create("resourcequotas", resource_quota("default", "gpu", {{"limits.fracpack.io/gpu", "8"}}));
  c.api->create("resourcequotas", resource_quota("other", "broken", {{"limits.fracpack.io/gpu", "x"}}));
  c.start();
  // Every verb once, a failing bind too, so that labelled families have samples.
  const std::string pod = gpu_pod("p", "u-p", 50);
  c.api->create("pods", pod);
  std::vector<CandidateNode> nodes = {{"n1", ""}, {"n2", ""}};
  c.driver().schedule(pod, nodes);
  ASSERT_TRUE(c.driver().bind("default", "p", "u-p", "n1").ok());
  EXPECT_FALSE(c.driver().bind("default", "ghost", "u-ghost", "n1").ok());
  (void)c.driver().preempt(0, gpu_pod("vip", "u-vip", 100, 0, 1, {}, 1000), {{"n1", {"u-p"}}});
  const std::string metrics = http_get(c.url(), "/metrics").body;
  const std::set<std::string> exported = exported_metrics(metrics);
  ASSERT_GT(exported.size(), 20u) << metrics;

  auto text = read_file(std::string(FRACPACK_SOURCE_DIR) + "/manifests/grafana/fracpack-dashboard.json");
  ASSERT_TRUE(text);
  const nlohmann::json dashboard = nlohmann::json::parse(*text);
  std::set<std::string> used;
  std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& j) {
    if (j.is_object()) {
      for (const auto& [k, v] : j.items()) {
        if ((k == "expr" || k == "query" || k == "definition") && v.is_string()) {
          static const std::regex name("fracpack_[a-z0-9_]+");
          const std::string s = v.get<std::string>();
          for (auto it = std::sregex_iterator(s.begin(), s.end(), name); it != std::sregex_iterator(); ++it) used.insert(it->str());
        } else {
          walk(v);
        }
      }
    } else if (j.is_array()) {
      for (const auto& v : j) walk(v);
    }
  };
  walk(dashboard);
  EXPECT_GT(used.size(), 15u);
  for (const auto& m : used) EXPECT_TRUE(exported.count(m)) << "the dashboard queries " << m << ", which fracpack does not export";
}

}  // namespace
}  // namespace fracpack::testing::dashboard_test
