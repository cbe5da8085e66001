#include "k8s/admission.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "k8s/contract/kubernetes_rules.h"
#include "k8s/limiter_guard.h"
#include "k8s/objects.h"
#include "k8s/scheduler_names.h"

namespace fracpack::k8s {
namespace {

// A tree: an AdmissionReview is read whole, its pod walked in several places (cold: one per pod created).
// (Named Tree, not json: k8s/json.h is the namespace k8s::json.)
using Tree = nlohmann::json;

const Tree* member(const Tree& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string text(const Tree& j, const char* key) {
  const Tree* v = member(j, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

bool contains(const std::vector<std::string>& list, const std::string& x) { return std::find(list.begin(), list.end(), x) != list.end(); }

// The value of annotation `key`, or nullptr (absent, or not a string).
const Tree* annotation(const Tree& object, const std::string& key) {
  const Tree* meta = member(object, "metadata");
  const Tree* annotations = meta != nullptr ? member(*meta, "annotations") : nullptr;
  if (annotations == nullptr || !annotations->is_object()) return nullptr;
  auto it = annotations->find(key);
  return it == annotations->end() ? nullptr : &*it;
}

// The first container asking cards that sets what k8s/limiter_guard.h
// guards: "spec.containers[1] (main): why". The share part for containers
// that ask a share resource (the policy's resources but the device count).
std::string limiter_overridden(const Pod& pod, const AdmissionPolicy& policy) {
  std::vector<std::string> share_resources;
  for (const std::string& r : policy.resources) {
    if (r != policy.device_resource) share_resources.push_back(r);
  }
  for (const auto& [list, containers] : {std::pair{"initContainers", &pod.init_containers}, std::pair{"containers", &pod.containers}}) {
    for (size_t i = 0; i < containers->size(); ++i) {
      const Container& c = (*containers)[i];
      if (named_resource(c, policy.resources).empty()) continue;
      const bool share = !named_resource(c, share_resources).empty();
      const std::string why = limiter_override(ContainerSettings{c.env, c.env_from, c.mount_paths}, policy.limiter, share, policy.limiter_paths);
      if (!why.empty()) return "spec." + std::string(list) + "[" + std::to_string(i) + "] (" + c.name + "): " + why;
    }
  }
  return {};
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

Result<AdmissionResult> review_admission(std::string_view body, const AdmissionPolicy& policy) {
  Tree review;
  try {
    review = Tree::parse(body);
  } catch (const Tree::exception& e) {
    return Error{std::string("the body is not JSON: ") + e.what()};
  }
  if (!review.is_object()) return Error{"the body is not an AdmissionReview object"};
  const std::string api_version = text(review, "apiVersion");
  if (text(review, "kind") != "AdmissionReview") return Error{"kind: expected AdmissionReview, got \"" + text(review, "kind") + "\""};
  if (api_version != "admission.k8s.io/v1" && api_version != "admission.k8s.io/v1beta1") {
    return Error{"apiVersion: expected admission.k8s.io/v1 or v1beta1, got \"" + api_version + "\""};
  }
  const Tree* request = member(review, "request");
  if (request == nullptr || !request->is_object()) return Error{"AdmissionReview: no request"};
  const std::string uid = text(*request, "uid");
  if (uid.empty()) return Error{"AdmissionReview: request.uid is missing"};

  const std::string operation = text(*request, "operation");
  const Tree* resource = member(*request, "resource");
  const std::string group = resource != nullptr ? text(*resource, "group") : "";
  const std::string plural = resource != nullptr ? text(*resource, "resource") : "";
  const std::string sub = text(*request, "subResource");
  const Tree* user = member(*request, "userInfo");
  const std::string username = user != nullptr ? text(*user, "username") : "";
  const bool writer = !username.empty() && contains(policy.record_writers, username);
  const Tree empty = Tree::object();
  const Tree* object = member(*request, "object");
  const Tree* old = member(*request, "oldObject");
  const Tree& obj = object != nullptr ? *object : empty;
  const Tree* meta = member(obj, "metadata");
  std::string ns = text(*request, "namespace");
  if (ns.empty() && meta != nullptr) ns = text(*meta, "namespace");
  std::string name = text(*request, "name");
  if (name.empty() && meta != nullptr) name = text(*meta, "name");
  if (name.empty() && meta != nullptr && !text(*meta, "generateName").empty()) name = text(*meta, "generateName") + "*";
  const std::string who = "pod " + ns + "/" + name;

  std::string refusal;
  auto refuse = [&refusal](std::string why) {
    if (refusal.empty()) refusal = std::move(why);
  };
  auto guarded_written = [&](const Tree& now, const Tree* before) {
    for (const std::string& key : policy.guarded_annotations) {
      const Tree* a = annotation(now, key);
      const Tree* b = before != nullptr ? annotation(*before, key) : nullptr;
      if ((a == nullptr) == (b == nullptr) && (a == nullptr || *a == *b)) continue;
      return key;
    }
    return std::string();
  };
  const std::string writers = policy.record_writers.empty() ? std::string("nobody") : joined(policy.record_writers);

  if (operation == "DELETE" || operation == "CONNECT") {
    // Nothing is written.
  } else if (group.empty() && plural == "pods" && sub.empty() && (operation == "CREATE" || operation == "UPDATE")) {
    if (object == nullptr) return Error{"AdmissionReview: request.object is missing for " + operation};
    if (operation == "UPDATE" && old == nullptr) return Error{"AdmissionReview: request.oldObject is missing for UPDATE"};
    if (!writer) {
      if (const std::string key = guarded_written(obj, operation == "UPDATE" ? old : nullptr); !key.empty()) {
        refuse(who + ": metadata.annotations[" + key + "] is part of the GPU allocation record, which only fracpack's extender writes (at bind); " +
               (operation == "CREATE" ? "remove it" : "leave it as it is") + " (user " + (username.empty() ? "?" : username) +
               " is not one of " + writers + ")");
      }
    }
    if (operation == "CREATE") {
      // The pod as the extender decodes it: whether it asks for cards is
      // the contract's one rule (k8s/contract/kubernetes_rules.h).
      Selection selection;
      selection.resources = policy.resources;
      selection.container_env = true;
      const std::string text = obj.dump();
      auto pod = parse_pod(text, selection);
      if (!pod) {
        // Unreadable (the API server's validation lets no such pod through):
        // refused only when its text names a resource of the contract, as it
        // may ask for cards and cannot be checked; any other pod is not the
        // contract's to judge, and a webhook that sees every pod must not
        // stop unrelated workloads.
        const bool may_ask = std::any_of(policy.resources.begin(), policy.resources.end(),
                                         [&](const std::string& r) { return text.find("\"" + r + "\"") != std::string::npos; });
        if (may_ask) refuse(who + ": " + pod.message());
      } else if (const std::string& r = named_resource(*pod, policy.resources); !r.empty()) {
        const std::string& node = pod->node_name;
        const std::string& scheduler = pod->scheduler_name;
        // (An empty list places no pod: the configuration refuses one.)
        const std::string suggested_scheduler =
            policy.scheduler_names.empty() ? std::string(kDefaultSchedulerName) : policy.scheduler_names.front();
        if (!node.empty()) {
          refuse(who + ": spec.nodeName is set (" + node + ") on a pod asking " + r +
                 ": GPU shares are placed by fracpack's scheduler, which chooses the cards; remove spec.nodeName and set spec.schedulerName: " +
                 suggested_scheduler);
        } else if (!placed_by_fracpack(scheduler, policy.scheduler_names)) {
          refuse(who + ": spec.schedulerName is \"" + (scheduler.empty() ? std::string("default-scheduler") : scheduler) + "\" on a pod asking " +
                 r + ": only fracpack's scheduler (" + joined(policy.scheduler_names) + ") places GPU shares; set spec.schedulerName: " +
                 suggested_scheduler);
        } else if (const std::string why = policy.guard_limits ? limiter_overridden(*pod, policy) : std::string(); !why.empty()) {
          refuse(who + ": " + why + " (README, Isolation: a share is a limit)");
        }
      }
    }
  } else if (group.empty() && plural == "pods" && sub == "binding" && operation == "CREATE") {
    if (object == nullptr) return Error{"AdmissionReview: request.object is missing for CREATE"};
    if (!writer) {
      if (const std::string key = guarded_written(obj, nullptr); !key.empty()) {
        refuse(who + ": this Binding writes metadata.annotations[" + key + "], part of the GPU allocation record, which only fracpack's extender writes (user " +
               (username.empty() ? "?" : username) + " is not one of " + writers + ")");
      }
    }
  } else {
    refuse("fracpack's webhook validates pods (CREATE, UPDATE) and pods/binding (CREATE) only; it was sent " + operation + " of " +
           (group.empty() ? "" : group + "/") + (plural.empty() ? "?" : plural) + (sub.empty() ? "" : "/" + sub) +
           ": check the ValidatingWebhookConfiguration's rules");
  }

  AdmissionResult out;
  out.allowed = refusal.empty();
  out.message = refusal;
  Tree response = {{"uid", uid}, {"allowed", out.allowed}};
  if (!out.allowed) response["status"] = {{"code", 403}, {"reason", "Forbidden"}, {"message", refusal}};
  out.response = Tree{{"apiVersion", api_version}, {"kind", "AdmissionReview"}, {"response", response}}.dump();
  return out;
}

}  // namespace fracpack::k8s
