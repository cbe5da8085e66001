#include "server/status_routes.h"

#include "common/error_body.h"
#include "common/json/write.h"
#include "server/ledger_report.h"

namespace fracpack::server {

StatusRoutes::StatusRoutes(const k8s::ClusterState& state, Metrics& metrics, StatusOptions options)
    : state_(state), metrics_(metrics), options_(std::move(options)) {}

std::optional<HttpResponse> StatusRoutes::get(const std::string& path) const {
  if (path == "/healthz") return HttpResponse{200, "ok\n", "text/plain"};
  if (path == "/readyz") return readyz();
  if (path == "/version") {
    std::string body = "{";
    append_json_field(body, "version", options_.version, false);
    append_json_field(body, "policy", options_.policy);
    append_json_field(body, "mode", options_.mode);
    body += "}";
    return HttpResponse{200, std::move(body)};
  }
  if (path == "/metrics") return HttpResponse{200, metrics_.serialize(), "text/plain; version=0.0.4"};
  if (path == "/debug/ledger") return HttpResponse{200, ledger_json()};
  if (path == "/debug/snapshot") return HttpResponse{200, state_.snapshot_json()};
  if (path == "/debug/quota") {
    return HttpResponse{200, "{\"quotas\":" + state_.read([](const scheduling::Ledger& l) { return quota_report_json(l); }) + "}"};
  }
  return std::nullopt;
}

HttpResponse StatusRoutes::readyz() const {
  const std::string saturated = options_.saturation ? options_.saturation() : "";
  if (state_.ready() && saturated.empty()) return HttpResponse{200, "ok\n", "text/plain"};
  std::string why;
  if (!state_.ready()) {
    why = "initial lists not applied yet";
    if (options_.sources) {
      for (const auto& s : options_.sources()) {
        if (!s.stats.synced) why += "; " + s.resource + (s.stats.last_error.empty() ? ": listing" : ": " + s.stats.last_error);
      }
    }
  }
  if (!saturated.empty()) why += (why.empty() ? "" : "; ") + saturated;
  return HttpResponse{503, error_body(why)};
}

std::string StatusRoutes::ledger_json() const {
  return state_.read([&](const scheduling::Ledger& ledger) { return ledger_report_json(ledger, options_.workload.get()); });
}

}  // namespace fracpack::server
