// The admission webhook's listener (admission.listen, TLS): POST /validate
// answers kube-apiserver's AdmissionReview (k8s/admission.h); GET /healthz.
// Nothing else is served there: it faces the API server, not the verbs'
// kube-scheduler. Each review is timed (fracpack_http_request_duration_
// seconds{verb="admission"}) and counted by decision
// (fracpack_admission_reviews_total{decision}).
#pragma once

#include "k8s/admission.h"
#include "server/http_server.h"
#include "server/metrics.h"

namespace fracpack::server {

class AdmissionRoutes {
 public:
  AdmissionRoutes(k8s::AdmissionPolicy policy, Metrics& metrics) : policy_(std::move(policy)), metrics_(metrics) {}
  void handle(HttpRequest&& request, Reply reply);

 private:
  const k8s::AdmissionPolicy policy_;
  Metrics& metrics_;
};

}  // namespace fracpack::server
