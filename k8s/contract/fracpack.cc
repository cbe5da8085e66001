#include "k8s/contract/fracpack.h"

#include <array>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "k8s/contract/codec.h"
#include "k8s/json.h"
#include "common/json/write.h"
#include "scheduling/fit.h"
#include "scheduling/quantity.h"

namespace fracpack::k8s {

Selection ContractNames::selection() const {
  Selection s = selection_of({&model, &uuid, &uuid_exclude, &numa, &isolation, &devices, &cordon, &allocation, &indices}, gpu_resources());
  s.label_prefixes = {gfd_count, gfd_memory, gfd_product};
  return s;
}

namespace {

// A container's share request, or none (cards == 0) when it names nothing.
Result<ContainerRequest> container_request(const Container& c, bool init, const ContractNames& n) {
  ContainerRequest r;
  r.name = c.name;
  r.init = init;
  auto asked = share_resources(c, n.gpu, n.gpu_memory, n.gpu_memory_percent, n.gpu_cores);
  if (!asked) return asked.error();
  const ShareResources& a = *asked;
  if (!a.asks()) return r;  // no GPU for this container
  if (a.has_memory && a.has_percent) {
    return Error{"resources.limits: " + n.gpu_memory + " and " + n.gpu_memory_percent + " are alternatives; name one"};
  }
  const int64_t cards = a.has_count ? a.count : 1;
  if (a.has_memory && a.memory < 1) return Error{"resources.limits[" + n.gpu_memory + "]: must be at least 1 (MiB)"};
  if (a.has_memory && a.memory > (int64_t{1} << 40)) return Error{"resources.limits[" + n.gpu_memory + "]: out of range (MiB)"};
  if (a.has_percent && (a.percent < 1 || a.percent > 100)) {
    return Error{"resources.limits[" + n.gpu_memory_percent + "]: must be 1..100 (percent), got " + std::to_string(a.percent)};
  }
  if (a.has_cores && (a.cores < 1 || a.cores > 100)) {
    return Error{"resources.limits[" + n.gpu_cores + "]: must be 1..100 (percent), got " + std::to_string(a.cores)};
  }
  r.cards = static_cast<int>(cards);
  if (!a.names_share()) {  // a bare count: whole, exclusive cards
    r.cores = scheduling::kCardMilli;
    r.memory_percent = 100;
    return r;
  }
  r.memory_mib = a.has_memory ? a.memory : 0;
  r.memory_percent = a.has_percent ? static_cast<int>(a.percent) : 0;
  r.cores = a.has_cores ? static_cast<int>(a.cores) * 10 : 0;
  return r;
}

Result<int64_t> label_int(const Node& node, const std::string& label, int64_t min, int64_t max) {
  const std::string* v = node.meta.label(label);
  if (v == nullptr) return Error{"label " + label + " is missing"};
  int64_t x = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
  if (v->empty() || ec != std::errc() || p != v->data() + v->size() || x < min || x > max) {
    return Error{"label " + label + ": " + in_quotes(*v) + " is not an integer in " + std::to_string(min) + ".." +
                 std::to_string(max)};
  }
  return x;
}

}  // namespace

Status read_placement_annotations(const Pod& pod, const ContractNames& n, const FracpackOptions& options, PodRequest& r) {
  const std::string who = "pod " + pod.key();
  if (const std::string* m = pod.meta.annotation(n.model)) {
    r.allowed_models = split_list(*m, '|');
    if (r.allowed_models.empty()) return Error{who + ": annotation " + n.model + " names no model"};
  }
  if (const std::string* u = pod.meta.annotation(n.uuid)) {
    r.uuid_allow = split_list(*u, ',');
    if (r.uuid_allow.empty()) return Error{who + ": annotation " + n.uuid + " names no card"};
  }
  if (const std::string* u = pod.meta.annotation(n.uuid_exclude)) {
    r.uuid_exclude = split_list(*u, ',');
    if (r.uuid_exclude.empty()) return Error{who + ": annotation " + n.uuid_exclude + " names no card"};
  }
  if (const std::string* numa = pod.meta.annotation(n.numa)) {
    const std::string v = trim(*numa);
    if (v == "single") {
      r.numa_single = true;
    } else if (v != "any") {
      return Error{who + ": annotation " + n.numa + ": " + in_quotes(*numa) + " is not one of single, any"};
    }
  }
  // A share of a card's compute must be enforced where the cluster refuses
  // unenforced shares, unless the pod accepts one (README "Isolation").
  bool accepts_unenforced = options.unenforced_shares != UnenforcedShares::kRefuse;
  if (const std::string* iso = pod.meta.annotation(n.isolation)) {
    if (trim(*iso) != "none") {
      return Error{who + ": annotation " + n.isolation + ": " + in_quotes(*iso) +
                   " is not none (the one value: the pod accepts a share its card cannot enforce)"};
    }
    accepts_unenforced = true;
  }
  if (!accepts_unenforced) {
    for (ContainerRequest& c : r.containers) c.needs_enforcement = c.cores < scheduling::kCardMilli;
    r.unenforced_opt_in = "annotation " + n.isolation + ": none";
  }
  return Status::Ok();
}

const char* unenforced_shares_name(UnenforcedShares u) { return u == UnenforcedShares::kRefuse ? "refuse" : "allow"; }

FracpackContract::FracpackContract(ContractNames names, ForeignProfiles foreign, FracpackOptions options)
    : ProfileContract(profile_name(Profile::kFracpack), std::move(names), options, std::move(foreign)) {}

std::vector<std::string> FracpackContract::start_warnings() const {
  if (options_.unenforced_shares == UnenforcedShares::kRefuse) return {};
  return {"shares may go on cards that cannot enforce them (placement.unenforcedShares: allow): a container given part of a "
          "card whose node agent runs without isolation can use all of it; refuse places such shares only for pods annotated " +
          names_.isolation + ": none"};
}

Result<PodRequest> FracpackContract::pod_request(const Pod& pod) const {
  const ContractNames& n = names_;
  const std::string who = "pod " + pod.key();
  if (Status s = foreign_.check_pod(pod, resources_); !s.ok()) return Error{s.message()};
  PodRequest r;
  if (Status s = pod_facts(pod, r); !s.ok()) return Error{s.message()};

  size_t total_cards = 0;
  bool r_init_shares = false;
  auto add = [&](const Container& c, bool init) -> Status {
    auto cr = container_request(c, init, n);
    if (!cr) return with_context(who + ": " + (init ? "init container " : "container ") + c.name, cr.error());
    if (cr->cards > 0) {
      total_cards += static_cast<size_t>(cr->cards);
      r.containers.push_back(std::move(*cr));
    }
    return Status::Ok();
  };
  for (const Container& c : pod.init_containers) {
    // Sidecars run beside the app containers: they count as app containers.
    if (Status s = add(c, !c.restart_always); !s.ok()) return Error{s.message()};
    // Only fracpack.io/gpu is a node resource; kubelets before 1.31 refuse
    // an init container naming the others.
    for (const std::string* share : {&n.gpu_memory, &n.gpu_memory_percent, &n.gpu_cores}) {
      if (find(c.limits, *share) != nullptr || find(c.requests, *share) != nullptr) r_init_shares = true;
    }
  }
  r.init_names_unknown_resources = r_init_shares;
  for (const Container& c : pod.containers) {
    if (Status s = add(c, false); !s.ok()) return Error{s.message()};
  }
  if (total_cards > scheduling::Picks::kMax) {
    return Error{who + ": asks for " + std::to_string(total_cards) + " card shares in all; the maximum is 64"};
  }

  if (Status s = read_placement_annotations(pod, n, options_, r); !s.ok()) return Error{s.message()};
  return r;
}

namespace {

// `unregistered`: how many cards say "registered":false.
Result<std::vector<Card>> parse_devices(std::string_view text, int& unregistered) {
  std::vector<Card> cards;
  Status s = json::for_each_object_in(text, "card ", "expected a JSON array of cards", [&](json::od::object obj, const std::string& where) -> Status {
    Card c;
    bool has_index = false, has_memory = false;
    Status read = json::for_each_field(obj, where, [&](std::string_view key, json::od::value v) -> Status {
      json::FieldValue f(v, where, key);
      if (key == "index") {
        has_index = true;
        return f.integer(0, 1023, c.index);
      }
      if (key == "uuid") return f.string(c.uuid);
      if (key == "model") return f.string(c.model);
      if (key == "memoryMiB") {
        has_memory = true;
        int64_t x = 0;
        if (!f.integer(1, int64_t{1} << 30, x).ok()) return f.fail("must be a positive integer");
        c.memory_mib = x;
        return Status::Ok();
      }
      if (key == "numa") return f.integer(0, 255, c.numa);
      if (key == "healthy") return f.boolean(c.healthy);
      if (key == "maxSharers") return f.integer(0, 1 << 16, c.max_sharers);  // the node agent's device IDs per card
      if (key == "isolation") {  // what enforces a share there (absent: none, as older agents wrote)
        std::string name;
        if (Status st = f.string(name); !st.ok()) return st;
        if (!scheduling::parse_isolation(name, c.isolation)) return f.fail("must be one of none, mps, hami-core, mig");
        return Status::Ok();
      }
      if (key == "registered") {
        // The node agent's device plugin is not registered with kubelet:
        // kubelet would admit the pod and hand it no card.
        bool on = true;
        Status st = f.boolean(on);
        if (st.ok() && !on) {
          c.cordoned = true;
          ++unregistered;
        }
        return st;
      }
      return Status::Ok();
    });
    if (!read.ok()) return read;
    if (!has_index) return Error{where + ": index is required"};
    if (!has_memory) return Error{where + ": memoryMiB is required"};
    cards.push_back(std::move(c));
    return Status::Ok();
  });
  if (!s.ok()) return Error{s.message()};
  return cards;
}

}  // namespace

Result<NodeSpec> FracpackContract::node_spec(const Node& node) const {
  const ContractNames& n = names_;
  const std::string who = "node " + node.meta.name;
  auto basics = foreign_.node_basics(node);
  if (!basics || !basics->excluded.empty()) return basics;
  NodeSpec spec = std::move(*basics);

  if (const std::string* devices = node.meta.annotation(n.devices)) {
    int unregistered = 0;
    auto cards = parse_devices(*devices, unregistered);
    if (!cards) return Error{who + ": annotation " + n.devices + ": " + cards.message()};
    spec.cards = std::move(*cards);
    // Found on a real kubelet (issue 31): cards published while kubelet had
    // not registered the agent's device plugin were placed, and kubelet ran
    // the pods with no card at all. The agent marks them; and kubelet's own
    // count of the resource, when it states one, must not be 0.
    const std::string* allocatable = find(node.allocatable, n.gpu);
    if (unregistered > 0) {
      spec.unavailable = "the node agent's device plugin is not registered with kubelet yet (annotation " + n.devices +
                         "): no card is offered until it is";
    } else if (allocatable != nullptr && trim(*allocatable) == "0" && !spec.cards.empty()) {
      for (auto& c : spec.cards) c.cordoned = true;
      spec.unavailable = "kubelet counts no " + n.gpu + " on this node (allocatable 0): its device plugin is not registered, no card is offered";
    }
  } else if (node.meta.label(n.gfd_count) != nullptr) {
    auto count = label_int(node, n.gfd_count, 0, 64);
    if (!count) return Error{who + ": " + count.message()};
    if (*count > 0) {
      auto mem = label_int(node, n.gfd_memory, 1, int64_t{1} << 30);
      if (!mem) return Error{who + ": " + mem.message()};
      const std::string* product = node.meta.label(n.gfd_product);
      for (int i = 0; i < *count; ++i) {
        Card c;
        c.index = i;
        c.model = product != nullptr ? *product : std::string();
        c.memory_mib = *mem;
        spec.cards.push_back(std::move(c));
      }
    }
  }
  if (Status s = check_cards(spec, who, "annotation " + n.devices); !s.ok()) return Error{s.message()};
  spec.kubelet_minor = kubelet_minor(node.kubelet_version);
  if (const std::string* cordon = node.meta.annotation(n.cordon)) {
    if (Status s = apply_cordons(spec, *cordon, who, n.cordon); !s.ok()) return Error{s.message()};
  }
  return spec;
}

std::string cores_text(int milli) {
  if (milli % 10 == 0) return std::to_string(milli / 10);
  return std::to_string(milli / 10) + "." + std::to_string(milli % 10);
}

std::string format_allocation(const Allocation& a) {
  std::string out = "{\"node\":";
  append_json_string(out, a.node);
  out += ",\"containers\":[";
  for (size_t i = 0; i < a.containers.size(); ++i) {
    const ContainerAllocation& c = a.containers[i];
    if (i > 0) out += ",";
    out += "{\"name\":";
    append_json_string(out, c.name);
    if (c.init) out += ",\"init\":true";
    out += ",\"cards\":[";
    for (size_t j = 0; j < c.cards.size(); ++j) {
      const CardShare& s = c.cards[j];
      if (j > 0) out += ",";
      out += "{\"index\":" + std::to_string(s.index) + ",\"uuid\":";
      append_json_string(out, s.uuid);
      out += ",\"memoryMiB\":" + std::to_string(s.memory_mib) + ",\"cores\":" + cores_text(s.cores) + "}";
    }
    out += "]}";
  }
  out += "]}";
  return out;
}

std::string format_indices(const Allocation& a) { return scheduling::card_indices_text(a); }

std::optional<std::vector<int>> parse_indices(std::string_view text) {
  std::vector<int> out;
  for (std::string_view field : split_fields(text, ',')) {
    int v = 0;
    if (!parse_decimal(trim(field), v) || v < 0) return std::nullopt;
    out.push_back(v);
  }
  return out;
}

std::string format_devices(const std::vector<Card>& cards, bool registered) {
  std::string out = "[";
  for (size_t i = 0; i < cards.size(); ++i) {
    const Card& c = cards[i];
    if (i > 0) out += ",";
    out += "{\"index\":" + std::to_string(c.index) + ",\"uuid\":";
    append_json_string(out, c.uuid);
    out += ",\"model\":";
    append_json_string(out, c.model);
    out += ",\"memoryMiB\":" + std::to_string(c.memory_mib) + ",\"numa\":" + std::to_string(c.numa) +
           ",\"healthy\":" + (c.healthy ? "true" : "false");
    if (c.max_sharers > 0) out += ",\"maxSharers\":" + std::to_string(c.max_sharers);
    if (c.isolation != scheduling::CardIsolation::kNone) out += std::string(",\"isolation\":\"") + scheduling::isolation_name(c.isolation) + "\"";
    if (!registered) out += ",\"registered\":false";
    out += "}";
  }
  return out + "]";
}

namespace {

Status parse_share(json::od::object obj, const std::string& where, CardShare& out) {
  bool has_index = false;
  Status read = json::for_each_field(obj, where, [&](std::string_view key, json::od::value v) -> Status {
    json::FieldValue f(v, where, key, ".");
    if (key == "index") {
      has_index = true;
      return f.integer(0, 1023, out.index);
    }
    if (key == "uuid") return f.string(out.uuid);
    if (key == "memoryMiB") {
      if (!f.integer(0, int64_t{1} << 40, out.memory_mib).ok()) return f.fail("must be a non-negative integer");
      return Status::Ok();
    }
    if (key == "cores") {
      double x = 0;
      if (f.value().get_double().get(x) || !(x >= 0 && x <= 100)) return f.fail("must be a number 0..100");
      const double milli = x * 10;
      if (std::abs(milli - std::round(milli)) > 1e-6) return f.fail("has more than one decimal");
      out.cores = static_cast<int>(std::lround(milli));
    }
    return Status::Ok();
  });
  if (!read.ok()) return read;
  if (!has_index) return Error{where + ".index is required"};
  return Status::Ok();
}

Status parse_container(json::od::object obj, const std::string& where, ContainerAllocation& out) {
  bool has_cards = false;
  Status read = json::for_each_field(obj, where, [&](std::string_view key, json::od::value v) -> Status {
    json::FieldValue f(v, where, key, ".");
    if (key == "name") return f.string(out.name);
    if (key == "init") return f.boolean(out.init);
    if (key == "cards") {
      has_cards = true;
      return json::append_objects(v, where + ".cards", where + ".cards must be an array", out.cards, parse_share);
    }
    return Status::Ok();
  });
  if (!read.ok()) return read;
  if (!has_cards) return Error{where + ".cards is required"};
  std::set<int> seen;
  for (const auto& share : out.cards) {
    if (!seen.insert(share.index).second) return Error{where + ": card " + std::to_string(share.index) + " listed twice"};
  }
  return Status::Ok();
}

}  // namespace

Result<Allocation> parse_allocation(std::string_view text) {
  Allocation a;
  bool has_node = false, has_containers = false;
  Status s = json::with_document(text, [&](json::od::value root) -> Status {
    json::od::object obj;
    if (auto e = root.get_object().get(obj)) {
      return e == simdjson::INCORRECT_TYPE ? Error{"expected a JSON object"} : json::syntax_error(e, "");
    }
    return json::for_each_field(obj, "", [&](std::string_view key, json::od::value v) -> Status {
      if (key == "node") {
        std::string_view node;
        if (v.get_string().get(node) || node.empty()) return Error{"node must be a non-empty string"};
        a.node = std::string(node);
        has_node = true;
      } else if (key == "containers") {
        has_containers = true;
        return json::append_objects(v, "containers", "containers must be an array", a.containers, parse_container);
      }
      return Status::Ok();
    });
  });
  if (!s.ok()) return Error{s.message()};
  if (!has_node) return Error{"node is required"};
  if (!has_containers) return Error{"containers is required"};
  return a;
}

StringMap FracpackContract::allocation_annotations(const Pod&, const Allocation& allocation, const NodeSpec&,
                                                  std::chrono::system_clock::time_point) const {
  return {{names_.allocation, format_allocation(allocation)}, {names_.indices, format_indices(allocation)}};
}

RecordedAllocation FracpackContract::recorded_allocation(const Pod& pod, const NodeSpec*) const {
  RecordedAllocation out;
  if (const std::string* record = pod.meta.annotation(names_.allocation)) {
    auto a = parse_allocation(*record);
    if (a && a->node == pod.node_name) {
      out.kind = RecordedAllocation::Kind::kAllocation;
      out.allocation = std::move(*a);
      return out;
    }
    out.kind = RecordedAllocation::Kind::kMalformed;
    out.problem = a ? "annotation " + names_.allocation + " names node " + a->node + " but the pod is bound to " + pod.node_name
                    : "annotation " + names_.allocation + ": " + a.message();
  }
  // The flat index list: a partial record the caller matches to the request.
  if (const std::string* indices = pod.meta.annotation(names_.indices)) {
    if (auto cards = parse_indices(*indices)) {
      out.kind = RecordedAllocation::Kind::kCards;
      out.cards = std::move(*cards);
      out.cards_source = "annotation " + names_.indices;
    }
  }
  return out;
}

}  // namespace fracpack::k8s
