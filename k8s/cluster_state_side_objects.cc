// ClusterState's objects beside pods and nodes, each kept by its list and
// watch: the contract's ConfigMaps (Contract::node_config_map_namespace) and
// the namespace GPU quota's ResourceQuotas (k8s/quota.h). Both go through
// the same steps (side_object_arrived, end_side_list); what differs is how
// each is decoded, applied and deleted. Apart from cluster_state.cc, which
// keeps the pods, the nodes and the reservations' store, so that each file
// holds one job.
#include "k8s/cluster_state.h"

#include "common/text.h"

namespace fracpack::k8s {
namespace {

template <class Object>
std::string key_of(const Object& o) {
  return o.meta.namespace_name + "/" + o.meta.name;
}

}  // namespace

// Decoded before the lock; what cannot be is counted and reported by its
// kind; else noted as listed (by a list in progress) and applied or
// deleted under the lock. Answers the object's resourceVersion.
template <class Object, class Apply, class Remove>
Result<std::string> ClusterState::side_object_arrived(SideObjects& side, Result<Object> (*decode)(std::string_view, const Selection&),
                                                      std::string_view json, const char* how, WatchEventType type, bool listed,
                                                      Apply apply, Remove remove) {
  auto object = decode(json, contract_->selection());
  std::unique_lock lock(mu_);
  if (!object) {
    undecodable_locked(side.kind, how, object.message());
    return object.error();
  }
  if (listed) side.listed.insert(key_of(*object));
  if (type == WatchEventType::kDeleted) {
    remove(*object);
  } else {
    apply(*object);
  }
  return object->meta.resource_version;
}

void ClusterState::reset_side_list(SideObjects& side) {
  std::unique_lock lock(mu_);
  side.listed.clear();
}

void ClusterState::end_side_list(SideObjects& side, const std::function<std::vector<SideObjectRef>()>& kept,
                                 const std::function<void(const SideObjectRef&)>& remove) {
  std::unique_lock lock(mu_);
  for (const SideObjectRef& object : kept()) {
    if (!side.listed.contains(object.namespace_name + "/" + object.name)) remove(object);
  }
  side.synced = true;
  side.listed.clear();
}

// --- the contract's ConfigMaps ---

void ClusterState::begin_config_map_list(bool) { reset_side_list(config_map_list_); }

Status ClusterState::list_config_map(std::string_view json) {
  auto rv = config_map_arrived(json, "listed", WatchEventType::kAdded, /*listed=*/true);
  return rv ? Status::Ok() : Error{rv.message()};
}

Result<std::string> ClusterState::config_map_event(WatchEventType type, std::string_view json) {
  return config_map_arrived(json, "watched", type, /*listed=*/false);
}

Result<std::string> ClusterState::config_map_arrived(std::string_view json, const char* how, WatchEventType type, bool listed) {
  return side_object_arrived(
      config_map_list_, &parse_config_map, json, how, type, listed,
      [this](const ConfigMap& m) {
        config_maps_.insert(key_of(m));
        builder_.apply_config_map(m);
      },
      [this](const ConfigMap& m) {
        config_maps_.erase(key_of(m));
        builder_.delete_config_map(m.meta.namespace_name, m.meta.name);
      });
}

void ClusterState::end_config_map_list() {
  end_side_list(
      config_map_list_,
      [this] {
        std::vector<SideObjectRef> kept;
        for (const std::string& key : config_maps_) {
          const ObjectKey k = split_object_key(key);
          kept.push_back(SideObjectRef{std::string(k.namespace_name), std::string(k.name)});
        }
        return kept;
      },
      [this](const SideObjectRef& m) {
        builder_.delete_config_map(m.namespace_name, m.name);
        config_maps_.erase(m.namespace_name + "/" + m.name);
      });
}

void ClusterState::abort_config_map_list() { reset_side_list(config_map_list_); }

// --- the namespace quota's ResourceQuotas ---

void ClusterState::apply_resource_quota_locked(const ResourceQuota& quota) {
  for (const scheduling::QuotaLimit& l : quotas_.apply(quota, builder_.ledger())) {
    ++counters_.malformed_quotas;
    const std::string message = "spec.hard " + l.key + " cannot be read (" + l.malformed +
                                "): no new GPU placement in the namespace until it is fixed";
    problem_locked("resourcequota " + quota.meta.namespace_name + "/" + quota.meta.name, message);
    if (options_.on_quota_problem) options_.on_quota_problem(quota.meta, message);
  }
}

void ClusterState::apply_resource_quota(const ResourceQuota& quota) {
  std::unique_lock lock(mu_);
  apply_resource_quota_locked(quota);
}

void ClusterState::delete_resource_quota(const std::string& namespace_name, const std::string& name) {
  std::unique_lock lock(mu_);
  quotas_.remove(namespace_name, name, builder_.ledger());
}

void ClusterState::begin_resource_quota_list(bool) { reset_side_list(quota_list_); }

Status ClusterState::list_resource_quota(std::string_view json) {
  auto rv = resource_quota_arrived(json, "listed", WatchEventType::kAdded, /*listed=*/true);
  return rv ? Status::Ok() : Error{rv.message()};
}

Result<std::string> ClusterState::resource_quota_event(WatchEventType type, std::string_view json) {
  return resource_quota_arrived(json, "watched", type, /*listed=*/false);
}

Result<std::string> ClusterState::resource_quota_arrived(std::string_view json, const char* how, WatchEventType type, bool listed) {
  return side_object_arrived(
      quota_list_, &parse_resource_quota, json, how, type, listed,
      [this](const ResourceQuota& q) { apply_resource_quota_locked(q); },
      [this](const ResourceQuota& q) { quotas_.remove(q.meta.namespace_name, q.meta.name, builder_.ledger()); });
}

void ClusterState::end_resource_quota_list() {
  end_side_list(
      quota_list_,
      [this] {
        std::vector<SideObjectRef> kept;
        for (const auto& [id, entry] : quotas_.objects()) kept.push_back(SideObjectRef{entry.namespace_name, entry.name});
        return kept;
      },
      [this](const SideObjectRef& q) { quotas_.remove(q.namespace_name, q.name, builder_.ledger()); });
}

void ClusterState::abort_resource_quota_list() { reset_side_list(quota_list_); }

std::vector<ClusterState::QuotaRow> ClusterState::quota_rows() const {
  std::shared_lock lock(mu_);
  std::vector<QuotaRow> out;
  const scheduling::Ledger& ledger = builder_.ledger();
  for (const auto& [id, entry] : quotas_.objects()) {
    const scheduling::QuotaUse use = ledger.namespace_use(entry.namespace_name);
    for (const scheduling::QuotaLimit& l : entry.limits) out.push_back(QuotaRow{entry.namespace_name, l, scheduling::quota_amount(use, l.resource)});
  }
  return out;
}

}  // namespace fracpack::k8s
