// The validating admission webhook (README "Security model"; kubernetes'
// AdmissionReview, admission.k8s.io/v1 and v1beta1): the first line of
// tenant safety, which stops, with a clear message, what the signed records
// (k8s/record_signature.h) would otherwise refuse later and less visibly.
//
//   pods CREATE         refused: the contract's record annotations (the
//                       allocation record, the signature, the peer's
//                       annotations) written by anyone but recordWriters;
//                       a pod asking the contract's resources with
//                       spec.nodeName set (it bypasses the scheduler), or
//                       with a schedulerName that is not fracpack's; a
//                       container asking them that sets a limiter's
//                       variables itself or mounts over its paths
//                       (k8s/limiter_guard.h: it would lift its own limit).
//   pods UPDATE         refused: any of those annotations set, changed or
//                       removed by anyone but recordWriters.
//   pods/binding CREATE refused: a Binding carrying those annotations from
//                       anyone but recordWriters (kube-scheduler's own
//                       Bindings carry none).
//   DELETE, CONNECT     allowed: nothing to forge.
//   anything else       refused, naming what was sent: the webhook is
//                       registered for the above only, so anything else is a
//                       misconfiguration, and a security check that does not
//                       know what it was asked must not say yes.
//
// A body that is not an AdmissionReview request (malformed JSON, no
// request.uid, a kind or apiVersion it does not know) is an error for the
// HTTP layer to answer 400: the API server then applies the webhook's
// failurePolicy. Nothing here allows by default.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "k8s/limiter_guard.h"

namespace fracpack::k8s {

struct AdmissionPolicy {
  std::vector<std::string> guarded_annotations;  // Contract::guarded_annotations()
  std::vector<std::string> resources;            // Contract::pod_resources()
  std::vector<std::string> record_writers;       // usernames allowed to write the guarded annotations
  std::vector<std::string> scheduler_names;      // a pod asking the resources must name one
  LimiterPaths limiter_paths;                    // where the limiters appear in a container (nodeAgent.mpsDir)
  // k8s/limiter_guard.h, with the fracpack contract only (a peer's plugin
  // decides for its own pods): the cluster's limiter (nodeAgent.isolation)
  // for containers asking a share (a resource other than device_resource).
  bool guard_limits = false;
  scheduling::CardIsolation limiter = scheduling::CardIsolation::kNone;
  std::string device_resource;
};

struct AdmissionResult {
  std::string response;  // the AdmissionReview to send back (200)
  bool allowed = false;
  std::string message;   // why not, when refused
};

// Decides one AdmissionReview request.
Result<AdmissionResult> review_admission(std::string_view body, const AdmissionPolicy& policy);

}  // namespace fracpack::k8s
