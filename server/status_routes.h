// The routes beside the extender verbs: /healthz (alive), /readyz (the
// initial lists applied; 503 with the reason before), /version, /metrics,
// /debug/ledger (what `fracpack inspect` reads) and /debug/snapshot (the
// store as a v1 List that `replay snapshot` reads).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "k8s/cluster_informers.h"
#include "k8s/cluster_state.h"
#include "scheduling/workload.h"
#include "server/http_server.h"
#include "server/metrics.h"

namespace fracpack::server {

struct StatusOptions {
  std::string version = "dev";
  std::string mode = "snapshot";  // "snapshot" or "kubernetes", for /version
  std::string policy;             // for /version
  std::function<std::vector<k8s::SourceHealth>()> sources;  // may be empty
  // "" while the extender port can take a new connection, else why not
  // (HttpServer::saturation); may be empty.
  std::function<std::string()> saturation;
  // The target workload (fragmentation figures in /debug/ledger); may be null.
  std::shared_ptr<const scheduling::ShapeCounts> workload;
};

class StatusRoutes {
 public:
  StatusRoutes(const k8s::ClusterState& state, Metrics& metrics, StatusOptions options);

  // The answer for a GET of `path`, or nothing when the path is not one of these.
  std::optional<HttpResponse> get(const std::string& path) const;
  // The JSON of /debug/ledger.
  std::string ledger_json() const;

 private:
  HttpResponse readyz() const;

  const k8s::ClusterState& state_;
  Metrics& metrics_;
  StatusOptions options_;
};

}  // namespace fracpack::server
