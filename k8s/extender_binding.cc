#include "k8s/extender_binding.h"

#include "common/error_body.h"
#include "k8s/extender_body.h"
#include "k8s/limits.h"

namespace fracpack::k8s {

namespace {

using extender_body::KeyMatch;
using extender_body::get_plain_string;
namespace od = json::od;

}  // namespace

Result<BindingArgs> parse_binding_args(std::string_view body) {
  BindingArgs args;
  KeyMatch name_key, ns_key, uid_key, node_key;
  Status s = extender_body::parse_body(body, 0, [&](od::value root, const extender_body::TextMap&) -> Status {
    return json::for_each_field(root, "ExtenderBindingArgs", [&](std::string_view key, od::value v) -> Status {
      Status st = Status::Ok();
      if (name_key.take(key, "PodName")) args.pod_name = get_plain_string(v, "PodName", st);
      else if (ns_key.take(key, "PodNamespace")) args.pod_namespace = get_plain_string(v, "PodNamespace", st);
      else if (uid_key.take(key, "PodUID")) args.pod_uid = get_plain_string(v, "PodUID", st);
      else if (node_key.take(key, "Node")) args.node = get_plain_string(v, "Node", st);
      return st;
    });
  });
  if (!s.ok()) return Error{s.message()};
  if (args.pod_name.empty()) return Error{"ExtenderBindingArgs: PodName is empty"};
  if (args.node.empty()) return Error{"ExtenderBindingArgs: Node is empty"};
  for (Status cs : {check_name(args.pod_name, "ExtenderBindingArgs.PodName"),
                    check_name(args.pod_namespace, "ExtenderBindingArgs.PodNamespace", kMaxNamespace),
                    check_name(args.pod_uid, "ExtenderBindingArgs.PodUID", kMaxUid), check_name(args.node, "ExtenderBindingArgs.Node")}) {
    if (!cs.ok()) return Error{cs.message()};
  }
  return args;
}

// The same shape as every error body fracpack answers with.
std::string format_binding_result(std::string_view error) { return error_body(error); }

}  // namespace fracpack::k8s
