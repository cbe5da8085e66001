// fracpack inspect (see inspect.h).
#include "server/cmd/inspect.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

// A tree: the ledger's report is read whole, filtered and printed indented (dump(2)).
#include <nlohmann/json.hpp>

#include "config/config.h"
#include "k8s/api_client.h"
#include "k8s/cluster_state.h"
#include "k8s/contract/profiles.h"
#include "server/cmd/args.h"
#include "server/cmd/commands.h"
#include "server/ledger_report.h"
#include "server/snapshot_source.h"

namespace fracpack::cli {
namespace {

constexpr const char* kInspectHelp = R"(usage: fracpack inspect [--server URL | --snapshot FILE] [NODE] [options]
       fracpack inspect [--server URL | --snapshot FILE] quota [NAMESPACE] [options]

Shows what fracpack has reserved, per node and card: model, GPU memory used
and total, compute used, sharers and their pods, and the cluster totals
(GPU allocation and fragmentation). The data is a running fracpack's
/debug/ledger (default http://127.0.0.1:8888), or a cluster snapshot read
here by the same code as "fracpack serve --snapshot".

"inspect quota" shows the namespace GPU quotas instead: per ResourceQuota
key fracpack enforces, what the namespace's pods hold (reservations of binds
in flight included) and the limit, in the key's unit (cards, MiB, percent of
a card). A node named "quota": --node quota.

options:
  --server URL                 a running fracpack: http[s]://HOST:PORT
  --snapshot FILE              a cluster snapshot (kubectl get nodes,pods,resourcequotas -A -o json)
  --config FILE                with --snapshot: the configuration (resource names, workload.file)
  --profile NAME               with --snapshot: read it as fracpack, hami or gpushare
                               (default: the configuration's contract.profile)
  -o, --output FORMAT          table (default) or json (the /debug/ledger document)
  --node NAME                  only this node (as NODE)
  --timeout DURATION           give up on the server after this long (default 10s)
  --ca-file FILE               https: trust this CA (PEM) instead of the system's
  --insecure-skip-tls-verify   https: do not verify the server's certificate
)";

using json = nlohmann::ordered_json;

std::string percent(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * ratio);
  return buf;
}

std::string fixed(double value, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

// Left-aligned columns, two spaces apart; the last column is not padded.
std::string format_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    if (width.size() < r.size()) width.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

// A field of the report, with an error naming it when it is missing or of
// the wrong type (the report may come from another fracpack version).
template <typename T>
T field(const json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) throw std::runtime_error(where + ": the ledger report has no \"" + key + "\"");
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw std::runtime_error(where + ": \"" + key + "\" has an unexpected type in the ledger report");
  }
}

std::string node_table(const json& nodes) {
  std::vector<std::vector<std::string>> rows{
      {"NODE", "CARD", "MODEL", "ISOLATION", "MEMORY MiB (USED/TOTAL)", "MEMORY", "COMPUTE", "SHARERS", "STATE", "PODS"}};
  for (const json& node : nodes) {
    const std::string name = field<std::string>(node, "name", "node");
    const json cards = field<json>(node, "cards", name);
    std::string label = name + (field<bool>(node, "present", name) ? "" : " (gone)");
    if (cards.empty()) rows.push_back({label, "-", "(no GPUs)", "", "", "", "", "", "", ""});
    for (const json& card : cards) {
      const std::string where = name + " card";
      const int64_t mem = field<int64_t>(card, "memoryMiB", where), used = field<int64_t>(card, "memoryUsedMiB", where);
      const int64_t compute = field<int64_t>(card, "computeMilli", where), compute_used = field<int64_t>(card, "computeUsedMilli", where);
      std::string state = !field<bool>(card, "healthy", where) ? "unhealthy" : field<bool>(card, "cordoned", where) ? "cordoned" : "ok";
      std::string pods;
      for (const json& p : field<json>(card, "pods", where)) pods += (pods.empty() ? "" : ",") + p.get<std::string>();
      // "3/10": three shares of a card whose agent serves at most ten (HAMi's split count).
      std::string sharers = std::to_string(field<int64_t>(card, "sharers", where));
      if (auto most = card.find("maxSharers"); most != card.end() && most->is_number_integer() && most->get<int64_t>() > 0) {
        sharers += "/" + std::to_string(most->get<int64_t>());
      }
      // What enforces a share on the card (an older server's report has none: "-").
      const std::string isolation = card.contains("isolation") ? field<std::string>(card, "isolation", where) : "-";
      rows.push_back({label, std::to_string(field<int64_t>(card, "index", where)), field<std::string>(card, "model", where), isolation,
                      std::to_string(used) + "/" + std::to_string(mem), mem > 0 ? percent(static_cast<double>(used) / static_cast<double>(mem)) : "-",
                      compute > 0 ? percent(static_cast<double>(compute_used) / static_cast<double>(compute)) : "-",
                      sharers, state, pods.empty() ? "-" : pods});
      label.clear();  // the node's name on its first card only
    }
  }
  return format_table(rows);
}

std::string totals_line(const json& totals) {
  const double gpus = field<double>(totals, "gpus", "totals");
  const double used = field<double>(totals, "gpuMilliUsed", "totals") / 1000.0;
  std::string out = "cluster: " + fixed(field<double>(totals, "nodes", "totals"), 0) + " nodes, " + fixed(gpus, 0) + " GPUs, " +
                    fixed(used, 2) + " GPUs allocated (" + percent(field<double>(totals, "allocatedRatio", "totals")) + ")";
  if (totals.contains("fragmentationRatio")) {
    out += ", fragmentation " + percent(field<double>(totals, "fragmentationRatio", "totals"));
  }
  out += ", " + fixed(field<double>(totals, "pods", "totals"), 0) + " pods (" + fixed(field<double>(totals, "assumedPods", "totals"), 0) +
         " assumed)\n";
  return out;
}

Result<std::string> fetch_ledger(const Args& args) {
  auto endpoint = k8s::Endpoint::parse(args.get_or("server", "http://127.0.0.1:8888"));
  if (!endpoint) return Error{"--server: " + endpoint.message()};
  if (!endpoint->base_path.empty() && endpoint->base_path != "/") {
    return Error{"--server: give the scheme, host and port only (" + endpoint->url() + "); /debug/ledger is served at the root"};
  }
  k8s::ClientConfig cc;
  cc.endpoint = *endpoint;
  if (auto ca = args.get("ca-file")) {
    auto pem = read_file(*ca);
    if (!pem) return Error{"--ca-file: " + pem.message()};
    cc.tls.ca_pem = *pem;
  }
  cc.tls.insecure_skip_verify = args.has("insecure-skip-tls-verify");
  auto timeout = config::parse_duration(args.get_or("timeout", "10s"));
  if (!timeout || timeout->count() <= 0) return Error{"--timeout: expected a positive duration like 10s"};
  cc.connect_timeout = *timeout;
  cc.request_timeout = *timeout;
  k8s::ApiClient client(cc);
  auto r = client.request("GET", "/debug/ledger");
  if (!r) return Error{"cannot read " + endpoint->url() + "/debug/ledger: " + r.message()};
  if (r->status != 200) return Error{endpoint->url() + "/debug/ledger answered " + std::to_string(r->status) + ": " + k8s::api_error_message(*r)};
  return r->body;
}

Result<std::string> snapshot_ledger(const Args& args) {
  config::Config c;
  if (auto file = args.get("config")) {
    auto loaded = config::load_config(*file);
    if (!loaded) return Error{loaded.message()};
    c = std::move(*loaded);
  }
  c.cluster.snapshot = *args.get("snapshot");
  c.cluster.kubeconfig.clear();
  k8s::SyncOptions so;
  if (auto v = args.get("profile")) {
    auto profile = k8s::parse_profile(*v);
    if (!profile) return Error{"--profile: " + profile.message()};
    c.contract.profile = *profile;
  }
  auto contract = k8s::make_contract(c.contract);
  if (!contract) return Error{"--profile: " + contract.message()};
  so.contract = std::move(*contract);
  k8s::ClusterState state(so);
  auto loaded = server::load_snapshot_state(c, state);
  if (!loaded) return Error{loaded.message()};
  for (const auto& p : loaded->problems) std::cerr << "fracpack: snapshot object skipped: " << p.message << "\n";
  return state.read([&](const scheduling::Ledger& ledger) { return server::ledger_report_json(ledger, loaded->workload.get()); });
}

}  // namespace

Result<std::string> render_inspect(const std::string& ledger_json, const std::optional<std::string>& node, InspectFormat format) {
  json report;
  try {
    report = json::parse(ledger_json);
  } catch (const json::exception& e) {
    return Error{std::string("the ledger report is not JSON: ") + e.what()};
  }
  try {
    if (!report.is_object() || !report.contains("nodes") || !report["nodes"].is_array() || !report.contains("totals")) {
      return Error{"the ledger report lacks \"nodes\" or \"totals\" (is this a fracpack /debug/ledger?)"};
    }
    json nodes = report["nodes"];
    if (node) {
      json only = json::array();
      for (const json& n : nodes) {
        if (n.value("name", "") == *node) only.push_back(n);
      }
      if (only.empty()) return Error{"node \"" + *node + "\" is not in the ledger (" + std::to_string(nodes.size()) + " nodes)"};
      nodes = std::move(only);
    }
    if (format == InspectFormat::kJson) return json{{"nodes", nodes}, {"totals", report["totals"]}}.dump(2) + "\n";
    std::string table = node_table(nodes);  // first: its errors name the node
    return table + "\n" + totals_line(report["totals"]);
  } catch (const std::exception& e) {
    return Error{e.what()};
  }
}

Result<std::string> render_quota(const std::string& ledger_json, const std::optional<std::string>& namespace_name,
                                 InspectFormat format) {
  json report;
  try {
    report = json::parse(ledger_json);
  } catch (const json::exception& e) {
    return Error{std::string("the ledger report is not JSON: ") + e.what()};
  }
  try {
    if (!report.is_object() || !report.contains("quotas") || !report["quotas"].is_array()) {
      return Error{"the ledger report lacks \"quotas\" (a fracpack older than the namespace GPU quota?)"};
    }
    json rows = json::array();
    for (const json& q : report["quotas"]) {
      if (!namespace_name || field<std::string>(q, "namespace", "quota") == *namespace_name) rows.push_back(q);
    }
    if (format == InspectFormat::kJson) return json{{"quotas", rows}}.dump(2) + "\n";
    if (rows.empty()) return std::string(namespace_name ? "no GPU quota in namespace " + *namespace_name + "\n" : "no GPU quota\n");
    std::vector<std::vector<std::string>> table = {{"NAMESPACE", "RESOURCEQUOTA", "KEY", "USED", "HARD"}};
    for (const json& q : rows) {
      const std::string where = "quota " + field<std::string>(q, "namespace", "quota") + "/" + field<std::string>(q, "resourceQuota", "quota");
      const std::string hard = q.contains("malformed") ? "cannot be read: " + field<std::string>(q, "malformed", where)
                                                        : fixed(field<double>(q, "hard", where), 0);
      table.push_back({field<std::string>(q, "namespace", where), field<std::string>(q, "resourceQuota", where),
                       field<std::string>(q, "key", where), fixed(field<double>(q, "used", where), 0), hard});
    }
    return format_table(table);
  } catch (const std::exception& e) {
    return Error{e.what()};
  }
}

int cmd_inspect(const std::vector<std::string>& argv_in) {
  std::vector<std::string> argv = argv_in;
  for (auto& a : argv) {
    if (a == "-o") a = "--output";
    else if (a.rfind("-o=", 0) == 0) a = "--output=" + a.substr(3);
  }
  auto args = Args::parse(argv, {"server", "snapshot", "config", "profile", "output", "timeout", "ca-file", "node"}, {"insecure-skip-tls-verify", "help"});
  if (!args) return usage_error(args.message());
  if (args->has("help")) {
    std::cout << kInspectHelp;
    return 0;
  }
  if (args->has("server") && args->has("snapshot")) return usage_error("--server and --snapshot exclude each other");
  if (args->has("config") && !args->has("snapshot")) return usage_error("--config goes with --snapshot (a server has its own)");
  if (args->has("profile") && !args->has("snapshot")) return usage_error("--profile goes with --snapshot (a server has its own)");
  const auto& positional = args->positional();
  const bool quota = !args->has("node") && !positional.empty() && positional[0] == "quota";
  if (quota ? positional.size() > 2 : positional.size() + (args->has("node") ? 1 : 0) > 1) {
    return usage_error(quota ? "inspect quota takes at most one namespace (see --help)" : "inspect takes at most one node name (see --help)");
  }
  const std::string output = args->get_or("output", "table");
  if (output != "table" && output != "json") return usage_error("--output: expected table or json, got \"" + output + "\"");
  const InspectFormat format = output == "json" ? InspectFormat::kJson : InspectFormat::kTable;
  std::optional<std::string> node = args->get("node");
  if (!quota && !positional.empty()) node = positional[0];
  std::optional<std::string> namespace_name;
  if (quota && positional.size() == 2) namespace_name = positional[1];

  auto ledger = args->has("snapshot") ? snapshot_ledger(*args) : fetch_ledger(*args);
  if (!ledger) return fail(ledger.message());
  auto text = quota ? render_quota(*ledger, namespace_name, format) : render_inspect(*ledger, node, format);
  if (!text) return fail(text.message());
  std::cout << *text;
  return 0;
}

}  // namespace fracpack::cli
