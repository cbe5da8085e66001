#include "k8s/extender_preemption.h"

#include "common/json/write.h"
#include "k8s/extender_body.h"
#include "k8s/limits.h"

namespace fracpack::k8s {

namespace {

using extender_body::KeyMatch;
using extender_body::is_null;
using extender_body::same_key;
namespace od = json::od;

}  // namespace

Result<PreemptionArgs> parse_preemption_args(std::string_view body, const Selection& selection) {
  PreemptionArgs args;
  KeyMatch pod_key, full_key, meta_key;
  bool saw_meta = false, saw_full = false;
  std::map<std::string, std::vector<std::string>> full, meta;
  std::map<std::string, int64_t> full_pdb, meta_pdb;
  // Victims per node: {"Pods":[...],"NumPDBViolations":n}; a pod is either a
  // MetaPod {"UID":...} or a full Pod whose metadata.uid counts.
  auto decode_victims = [&](od::value v, std::string_view path, bool is_meta, std::map<std::string, std::vector<std::string>>& out,
                            std::map<std::string, int64_t>& pdb) -> Status {
    return json::for_each_field(v, path, [&](std::string_view node, od::value victims) -> Status {
      if (Status cs = check_name(node, std::string(path) + " key"); !cs.ok()) return cs;
      const std::string where = std::string(path) + "." + std::string(node);
      std::vector<std::string>& uids = out[std::string(node)];
      if (Status cs = check_node_count(out.size(), path); !cs.ok()) return cs;
      KeyMatch pods_key, pdb_key;
      return json::for_each_field(victims, where, [&](std::string_view k, od::value x) -> Status {
        if (pdb_key.take(k, "NumPDBViolations")) {
          Status st = Status::Ok();
          if (is_null(x, st, where)) return Status::Ok();
          int64_t n = 0;
          if (x.get_int64().get(n)) return json::type_error(where + ".NumPDBViolations", "an integer");
          pdb[std::string(node)] = n;
          return Status::Ok();
        }
        if (!pods_key.take(k, "Pods")) return Status::Ok();
        return json::for_each_element(x, where + ".Pods", [&](od::value pod, size_t i) -> Status {
          const std::string pw = where + ".Pods[" + std::to_string(i) + "]";
          std::string uid;
          Status ps = json::for_each_field(pod, pw, [&](std::string_view pk, od::value pv) -> Status {
            if (is_meta) {
              if (!same_key(pk, "UID")) return Status::Ok();
              return json::get_string(pv, pw + ".UID", uid);
            }
            if (pk != "metadata") return Status::Ok();
            return json::for_each_field(pv, pw + ".metadata", [&](std::string_view mk, od::value mv) -> Status {
              if (mk != "uid") return Status::Ok();
              return json::get_string(mv, pw + ".metadata.uid", uid);
            });
          });
          if (!ps.ok()) return ps;
          if (uid.empty()) return Error{pw + ": a victim without a UID"};
          if (Status cs = check_name(uid, pw + ".UID", kMaxUid); !cs.ok()) return cs;
          uids.push_back(std::move(uid));
          return Status::Ok();
        });
      });
    });
  };
  Status s = extender_body::parse_body(body, 0, [&](od::value root, const extender_body::TextMap&) -> Status {
    return json::for_each_field(root, "ExtenderPreemptionArgs", [&](std::string_view key, od::value v) -> Status {
      if (pod_key.take(key, "Pod")) return extender_body::decode_pod_value(v, "Pod", selection, args.pod);
      Status st = Status::Ok();
      if (meta_key.take(key, "NodeNameToMetaVictims")) {
        if (is_null(v, st, "NodeNameToMetaVictims")) return Status::Ok();
        if (!st.ok()) return st;
        saw_meta = true;
        meta.clear();
        return decode_victims(v, "NodeNameToMetaVictims", true, meta, meta_pdb);
      }
      if (full_key.take(key, "NodeNameToVictims")) {
        if (is_null(v, st, "NodeNameToVictims")) return Status::Ok();
        if (!st.ok()) return st;
        saw_full = true;
        full.clear();
        return decode_victims(v, "NodeNameToVictims", false, full, full_pdb);
      }
      return Status::Ok();
    });
  });
  if (!s.ok()) return Error{s.message()};
  // The scheduler fills one of the two (nodeCacheCapable picks which).
  args.meta = saw_meta || !saw_full;
  args.victims = args.meta ? std::move(meta) : std::move(full);
  args.pdb_violations = args.meta ? std::move(meta_pdb) : std::move(full_pdb);
  return args;
}

std::string format_preemption_result(const std::map<std::string, MetaVictims>& victims) {
  std::string out = "{\"NodeNameToMetaVictims\":{";
  bool first = true;
  for (const auto& [node, v] : victims) {
    if (!first) out.push_back(',');
    first = false;
    append_json_string(out, node);
    out += ":{\"Pods\":[";
    for (size_t i = 0; i < v.uids.size(); ++i) {
      if (i) out.push_back(',');
      out += "{\"UID\":";
      append_json_string(out, v.uids[i]);
      out.push_back('}');
    }
    out += "],\"NumPDBViolations\":" + std::to_string(v.pdb_violations) + "}";
  }
  out += "}}";
  return out;
}

}  // namespace fracpack::k8s
