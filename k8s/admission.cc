#include "k8s/admission.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "k8s/scheduler_names.h"

namespace fracpack::k8s {
namespace {

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

// The first resource of `names` a container of the pod asks (limits or requests), or "".
// The first of `names` container `c` asks (limits or requests), or "".
std::string container_asks(const Tree& c, const std::vector<std::string>& names) {
  const Tree* resources = member(c, "resources");
  if (resources == nullptr) return {};
  for (const char* kind : {"limits", "requests"}) {
    const Tree* r = member(*resources, kind);
    if (r == nullptr || !r->is_object()) continue;
    for (const std::string& n : names) {
      if (r->contains(n)) return n;
    }
  }
  return {};
}

std::string asked_resource(const Tree& pod, const std::vector<std::string>& names) {
  const Tree* spec = member(pod, "spec");
  if (spec == nullptr) return {};
  for (const char* list : {"initContainers", "containers"}) {
    const Tree* containers = member(*spec, list);
    if (containers == nullptr || !containers->is_array()) continue;
    for (const Tree& c : *containers) {
      if (std::string n = container_asks(c, names); !n.empty()) return n;
    }
  }
  return {};
}

// The strings `field` of each object in the array `list` of `c`.
std::vector<std::string> strings_of(const Tree& c, const char* list, const char* field) {
  std::vector<std::string> out;
  const Tree* items = member(c, list);
  if (items == nullptr || !items->is_array()) return out;
  for (const Tree& item : *items) out.push_back(text(item, field));
  return out;
}

// The first container asking cards that sets what k8s/limiter_guard.h
// guards: "spec.containers[1] (main): why". The share part for containers
// that ask a share resource (the policy's resources but the device count).
std::string limiter_overridden(const Tree& pod, const AdmissionPolicy& policy) {
  const Tree* spec = member(pod, "spec");
  if (spec == nullptr) return {};
  std::vector<std::string> share_resources;
  for (const std::string& r : policy.resources) {
    if (r != policy.device_resource) share_resources.push_back(r);
  }
  for (const char* list : {"initContainers", "containers"}) {
    const Tree* containers = member(*spec, list);
    if (containers == nullptr || !containers->is_array()) continue;
    for (size_t i = 0; i < containers->size(); ++i) {
      const Tree& c = (*containers)[i];
      if (container_asks(c, policy.resources).empty()) continue;
      const bool share = !container_asks(c, share_resources).empty();
      const std::vector<std::string> env = strings_of(c, "env", "name"), env_from = strings_of(c, "envFrom", "prefix"),
                                     mounts = strings_of(c, "volumeMounts", "mountPath");
      const std::string why = limiter_override(ContainerSettings{env, env_from, mounts}, policy.limiter, share, policy.limiter_paths);
      if (!why.empty()) return "spec." + std::string(list) + "[" + std::to_string(i) + "] (" + text(c, "name") + "): " + why;
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
      if (const std::string r = asked_resource(obj, policy.resources); !r.empty()) {
        const Tree* spec = member(obj, "spec");
        const std::string node = spec != nullptr ? text(*spec, "nodeName") : "";
        std::string scheduler = spec != nullptr ? text(*spec, "schedulerName") : "";
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
        } else if (const std::string why = policy.guard_limits ? limiter_overridden(obj, policy) : std::string(); !why.empty()) {
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
