#include "k8s/contract/hami.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>

#include "common/json/write.h"
#include "k8s/contract/codec.h"
#include "k8s/json.h"
#include "k8s/contract/hami_node_lock.h"
#include "scheduling/fit.h"
#include "scheduling/quantity.h"

namespace fracpack::k8s {

namespace {

// Go's strconv.ParseBool, which HAMi's annotations go through.
std::optional<bool> parse_go_bool(std::string_view v) {
  for (std::string_view t : {"1", "t", "T", "TRUE", "true", "True"}) {
    if (v == t) return true;
  }
  for (std::string_view f : {"0", "f", "F", "FALSE", "false", "False"}) {
    if (v == f) return false;
  }
  return std::nullopt;
}

// One container's shares (GenerateResourceRequests + Fit's memory rule), or
// none (cards == 0) when it names nothing.
Result<ContainerRequest> container_request(const Container& c, const HamiNames& n, const HamiOptions& o) {
  ContainerRequest r;
  r.name = c.name;
  r.percent_rounds_down = true;
  auto asked = share_resources(c, n.gpu, n.gpu_memory, n.gpu_memory_percent, n.gpu_cores);
  if (!asked) return asked.error();
  const ShareResources& a = *asked;
  if (!a.asks()) return r;
  // kubelet calls the device plugin only for containers with nvidia.com/gpu;
  // a share-only container's record entry would be served to the next one.
  // HAMi's webhook adds nvidia.com/gpu: 1 (defaultGPUNum) to such containers.
  if (!a.has_count) {
    return Error{"names a GPU share but not resources.limits[" + n.gpu + "]; HAMi's device plugin serves only containers that ask for " +
                 n.gpu + " (HAMi's webhook adds it: keep the webhook or add " + n.gpu + ": 1)"};
  }
  const int64_t cards = a.count;
  if (a.has_memory && a.memory > (int64_t{1} << 40) / o.memory_factor) {
    return Error{"resources.limits[" + n.gpu_memory + "]: " + std::to_string(a.memory) + " is out of range (units of " +
                 std::to_string(o.memory_factor) + " MiB)"};
  }
  if (a.has_percent && a.percent > 100) {
    return Error{"resources.limits[" + n.gpu_memory_percent + "]: must be 0..100 (percent of the card), got " + std::to_string(a.percent)};
  }
  r.cards = static_cast<int>(cards);
  // Memory: MiB wins; else the percentage; else defaultMemory; else the card.
  if (a.has_memory && a.memory > 0) {
    r.memory_mib = a.memory * o.memory_factor;
  } else if (a.has_percent) {
    r.memory_percent = static_cast<int>(a.percent);
  } else if (o.default_memory > 0) {
    r.memory_mib = o.default_memory;
  } else {
    r.memory_percent = 100;
  }
  const int64_t percent = std::min<int64_t>(a.has_cores ? a.cores : o.default_cores, 100);  // HAMi clips above 100
  r.cores = static_cast<int>(percent) * 10;
  r.alone = percent == 100;  // HAMi: 100 % of the cores takes the card only when nothing else is on it
  return r;
}

}  // namespace

Selection HamiNames::selection() const {
  return selection_of({&use_type, &nouse_type, &use_uuid, &nouse_uuid, &numa_bind, &vgpu_mode, &register_devices, &cordon,
                       &to_allocate, &allocated, &vgpu_node, &vgpu_time, &bind_phase, &bind_time, &node_lock},
                      gpu_resources());
}

HamiContract::HamiContract(HamiNames names, HamiOptions options, ForeignProfiles foreign)
    : ProfileContract(profile_name(Profile::kHami), std::move(names), options, std::move(foreign)),
      node_lock_(HamiNodeLockOptions{names_.node_lock, options_.node_lock_expire, options_.node_lock_taken}) {
  if (options_.memory_factor < 1) options_.memory_factor = 1;
}

Result<PodRequest> HamiContract::pod_request(const Pod& pod) const {
  const HamiNames& n = names_;
  const std::string who = "pod " + pod.key();
  if (Status s = foreign_.check_pod(pod, resources_); !s.ok()) return Error{s.message()};
  PodRequest r;
  if (Status s = pod_facts(pod, r); !s.ok()) return Error{s.message()};
  for (const Container& c : pod.init_containers) {
    for (const std::string& res : resources_) {
      if (find(c.limits, res) != nullptr || find(c.requests, res) != nullptr) {
        return Error{who + ": init container " + c.name + " asks for " + res +
                     "; HAMi's device plugin serves spec.containers only (its record has no entry for init containers): "
                     "move the GPU to an app container"};
      }
    }
  }
  size_t total_cards = 0;
  for (const Container& c : pod.containers) {
    auto cr = container_request(c, n, options_);
    if (!cr) return with_context(who + ": container " + c.name, cr.error());
    if (cr->cards > 0) {
      total_cards += static_cast<size_t>(cr->cards);
      r.containers.push_back(std::move(*cr));
    }
  }
  if (total_cards > scheduling::Picks::kMax) {
    return Error{who + ": asks for " + std::to_string(total_cards) + " card shares in all; the maximum is 64"};
  }
  auto list = [&](const std::string& key, char sep, std::vector<std::string>& out) -> Status {
    const std::string* v = pod.meta.annotation(key);
    if (v == nullptr) return Status::Ok();
    out = split_list(*v, sep);
    if (out.empty()) return Error{who + ": annotation " + key + " names nothing"};
    return Status::Ok();
  };
  if (Status s = list(n.use_type, ',', r.allowed_models); !s.ok()) return Error{s.message()};
  if (Status s = list(n.nouse_type, ',', r.excluded_models); !s.ok()) return Error{s.message()};
  if (Status s = list(n.use_uuid, ',', r.uuid_allow); !s.ok()) return Error{s.message()};
  if (Status s = list(n.nouse_uuid, ',', r.uuid_exclude); !s.ok()) return Error{s.message()};
  r.model_match = PodRequest::ModelMatch::kContainsIgnoringCase;  // HAMi: strings.Contains of upper-cased names
  if (const std::string* numa = pod.meta.annotation(n.numa_bind)) {
    auto b = parse_go_bool(trim(*numa));
    if (!b) return Error{who + ": annotation " + n.numa_bind + ": " + in_quotes(*numa) + " is not true or false"};
    r.numa_single = *b;
  }
  if (const std::string* mode = pod.meta.annotation(n.vgpu_mode)) {
    if (trim(*mode) != "hami-core") {
      return Error{who + ": annotation " + n.vgpu_mode + ": " + in_quotes(*mode) +
                   ": fracpack places hami-core shares only (MIG and MPS slices stay with HAMi's scheduler)"};
    }
  }
  return r;
}

namespace {

Result<std::vector<Card>> parse_register_json(std::string_view text, std::vector<std::string>& modes, std::vector<bool>& has_index) {
  std::vector<Card> cards;
  Status parsed = json::for_each_object_in(text, "device ", "expected a JSON array of devices", [&](json::od::object obj, const std::string& where) -> Status {
    Card c;
    c.healthy = false;  // omitempty: an absent health is false
    int64_t count = 0, devcore = 0;
    bool index_given = false;
    std::string mode;
    Status read = json::for_each_field(obj, where, [&](std::string_view key, json::od::value v) -> Status {
      json::FieldValue f(v, where, key);
      if (key == "id") return f.string(c.uuid);
      if (key == "index") {
        index_given = true;
        return f.integer(0, 1023, c.index);
      }
      if (key == "count") return f.integer(0, 1 << 20, count);
      if (key == "devmem") return f.integer(0, int64_t{1} << 30, c.memory_mib);
      if (key == "devcore") return f.integer(0, 1 << 20, devcore);
      if (key == "type") return f.string(c.model);
      if (key == "numa") return f.integer(0, 255, c.numa);
      if (key == "mode") return f.string(mode);
      if (key == "health") return f.boolean(c.healthy);
      return Status::Ok();
    });
    if (!read.ok()) return read;
    if (c.uuid.empty()) return Error{where + ": id (the card's UUID) is required"};
    if (count < 1) return Error{where + " (" + c.uuid + "): count (the split count) must be at least 1"};
    if (c.memory_mib < 1) return Error{where + " (" + c.uuid + "): devmem (MiB) must be at least 1"};
    if (devcore < 1) return Error{where + " (" + c.uuid + "): devcore must be at least 1"};
    c.max_sharers = static_cast<int>(count);
    cards.push_back(std::move(c));
    modes.push_back(mode);
    has_index.push_back(index_given);
    return Status::Ok();
  });
  if (!parsed.ok()) return Error{parsed.message()};
  return cards;
}

Result<std::vector<Card>> parse_register_text(std::string_view text, std::vector<std::string>& modes, std::vector<bool>& has_index) {
  std::vector<Card> cards;
  size_t i = 0;
  for (const std::string& device : split_list(text, ':')) {
    const std::string where = "device [" + std::to_string(i++) + "]";
    std::vector<std::string> f;
    for (std::string_view field : split_fields(device, ',')) f.push_back(trim(field));
    if (f.size() != 7 && f.size() != 9) {
      return Error{where + ": " + std::to_string(f.size()) +
                   " fields; expected uuid,count,devmem,devcore,type,numa,health[,index,mode]"};
    }
    Card c;
    c.uuid = f[0];
    int64_t count = 0, devcore = 0;
    if (c.uuid.empty()) return Error{where + ": the UUID is empty"};
    if (!parse_decimal(f[1], count) || count < 1) return Error{where + " (" + c.uuid + "): count " + in_quotes(f[1]) + " is not a positive integer"};
    if (!parse_decimal(f[2], c.memory_mib) || c.memory_mib < 1 || c.memory_mib > (int64_t{1} << 30)) {
      return Error{where + " (" + c.uuid + "): devmem " + in_quotes(f[2]) + " is not a positive integer (MiB)"};
    }
    if (!parse_decimal(f[3], devcore) || devcore < 1) return Error{where + " (" + c.uuid + "): devcore " + in_quotes(f[3]) + " is not a positive integer"};
    c.model = f[4];
    if (!parse_decimal(f[5], c.numa) || c.numa < 0 || c.numa > 255) return Error{where + " (" + c.uuid + "): numa " + in_quotes(f[5]) + " is not 0..255"};
    auto healthy = parse_go_bool(f[6]);
    if (!healthy) return Error{where + " (" + c.uuid + "): health " + in_quotes(f[6]) + " is not true or false"};
    c.healthy = *healthy;
    c.max_sharers = static_cast<int>(std::min<int64_t>(count, 1 << 20));
    bool index_given = false;
    std::string mode = "hami-core";
    if (f.size() == 9) {
      if (!parse_decimal(f[7], c.index) || c.index < 0 || c.index > 1023) {
        return Error{where + " (" + c.uuid + "): index " + in_quotes(f[7]) + " is not 0..1023"};
      }
      index_given = true;
      mode = f[8];
    }
    cards.push_back(std::move(c));
    modes.push_back(mode);
    has_index.push_back(index_given);
  }
  return cards;
}

}  // namespace

Result<std::vector<Card>> parse_hami_register(std::string_view text) {
  std::vector<std::string> modes;
  std::vector<bool> has_index;
  const std::string t = trim(text);
  auto cards = !t.empty() && t.front() == '[' ? parse_register_json(t, modes, has_index) : parse_register_text(t, modes, has_index);
  if (!cards) return cards;
  std::set<int> indices;
  for (const Card& c : *cards) indices.insert(c.index);
  if (indices.size() != cards->size()) {
    // Older plugins leave the index out (0 for all): the register's order stands in.
    for (size_t i = 0; i < cards->size(); ++i) (*cards)[i].index = static_cast<int>(i);
  }
  for (size_t i = 0; i < cards->size(); ++i) {
    // MIG and MPS cards are cut by HAMi's own templates: fracpack leaves them be.
    if (!modes[i].empty() && modes[i] != "hami-core") (*cards)[i].cordoned = true;
    // What enforces a share there: HAMi's device plugin mounts HAMi-core
    // into every container it serves (README "Isolation").
    scheduling::CardIsolation isolation = scheduling::CardIsolation::kHamiCore;
    if (!modes[i].empty() && !scheduling::parse_isolation(modes[i], isolation)) isolation = scheduling::CardIsolation::kNone;
    (*cards)[i].isolation = isolation;
  }
  return cards;
}

std::string format_hami_register(const std::vector<Card>& cards) {
  std::string out = "[";
  for (const Card& c : cards) {
    out += out.size() > 1 ? ",{" : "{";
    append_json_field(out, "id", c.uuid, false);
    if (c.index != 0) out += ",\"index\":" + std::to_string(c.index);
    out += ",\"count\":" + std::to_string(c.max_sharers) + ",\"devmem\":" + std::to_string(c.memory_mib) + ",\"devcore\":100";
    append_json_field(out, "type", c.model);
    if (c.numa != 0) out += ",\"numa\":" + std::to_string(c.numa);
    out += ",\"mode\":\"hami-core\"";
    if (c.healthy) out += ",\"health\":true";
    out += "}";
  }
  out += "]";
  return out;
}

Result<NodeSpec> HamiContract::node_spec(const Node& node) const {
  const HamiNames& n = names_;
  const std::string who = "node " + node.meta.name;
  auto basics = foreign_.node_basics(node);
  if (!basics || !basics->excluded.empty()) return basics;
  NodeSpec spec = std::move(*basics);
  const std::string* reg = node.meta.annotation(n.register_devices);
  if (reg == nullptr) return spec;  // not a HAMi node
  auto cards = parse_hami_register(*reg);
  if (!cards) return Error{who + ": annotation " + n.register_devices + ": " + cards.message()};
  spec.cards = std::move(*cards);
  if (Status s = check_cards(spec, who, "annotation " + n.register_devices); !s.ok()) return Error{s.message()};
  // HAMi's CheckHealth: a node whose plugin reports no device is unhealthy.
  if (const std::string* alloc = find(node.allocatable, n.gpu)) {
    if (auto q = parse_extended_resource(*alloc); q && *q == 0) {
      for (Card& c : spec.cards) c.healthy = false;
    }
  }
  if (const std::string* cordon = node.meta.annotation(n.cordon)) {
    if (Status s = apply_cordons(spec, *cordon, who, n.cordon); !s.ok()) return Error{s.message()};
  }
  return spec;
}

Result<std::vector<std::vector<HamiDevice>>> parse_hami_devices(std::string_view text) {
  std::vector<std::vector<HamiDevice>> out;
  size_t start = 0;
  size_t ci = 0;
  while (start < text.size()) {
    // HAMi's decoder splits on ";": a last entry without one still counts.
    const size_t found = text.find(';', start);
    const size_t semi = found == std::string_view::npos ? text.size() : found;
    std::string_view entry = text.substr(start, semi - start);
    std::vector<HamiDevice> devices;
    size_t ds = 0;
    while (ds < entry.size()) {
      const size_t colon = entry.find(':', ds);
      std::string_view dev = entry.substr(ds, colon == std::string_view::npos ? std::string_view::npos : colon - ds);
      ds = colon == std::string_view::npos ? entry.size() : colon + 1;
      if (dev.empty()) continue;
      const std::vector<std::string_view> f = split_fields(dev, ',');
      const std::string where = "entry " + std::to_string(ci) + " device " + in_quotes(dev);
      if (f.size() < 4) return Error{where + ": expected UUID,type,memory,cores"};
      HamiDevice d;
      d.uuid = std::string(f[0].substr(0, f[0].find('[')));
      d.type = std::string(f[1]);
      if (d.uuid.empty()) return Error{where + ": the UUID is empty"};
      if (!parse_decimal(f[2], d.memory_mib) || d.memory_mib < 0 || d.memory_mib > (int64_t{1} << 40)) {
        return Error{where + ": memory " + in_quotes(f[2]) + " is not a non-negative integer (MiB)"};
      }
      if (!parse_decimal(f[3], d.cores) || d.cores < 0 || d.cores > 100) return Error{where + ": cores " + in_quotes(f[3]) + " is not 0..100"};
      devices.push_back(std::move(d));
    }
    out.push_back(std::move(devices));
    start = semi + 1;
    ++ci;
  }
  return out;
}

std::string format_hami_devices(const std::vector<std::vector<HamiDevice>>& containers) {
  std::string out;
  for (const auto& devices : containers) {
    for (const HamiDevice& d : devices) {
      out += d.uuid + "," + d.type + "," + std::to_string(d.memory_mib) + "," + std::to_string(d.cores) + ":";
    }
    out += ";";
  }
  return out;
}

StringMap HamiContract::allocation_annotations(const Pod& pod, const Allocation& allocation, const NodeSpec& node,
                                               std::chrono::system_clock::time_point now) const {
  // One entry per spec.containers, in order, empty ones included (the
  // device plugin walks them by position).
  std::vector<std::vector<HamiDevice>> entries(pod.containers.size());
  for (size_t i = 0; i < pod.containers.size(); ++i) {
    for (const ContainerAllocation& c : allocation.containers) {
      if (c.init || c.name != pod.containers[i].name) continue;
      for (const CardShare& s : c.cards) {
        std::string uuid = s.uuid;
        if (uuid.empty()) {
          for (const Card& card : node.cards) {
            if (card.index == s.index) uuid = card.uuid;
          }
        }
        entries[i].push_back(HamiDevice{uuid, "NVIDIA", s.memory_mib, (s.cores + 9) / 10});
      }
    }
  }
  const std::string devices = format_hami_devices(entries);
  const std::string seconds =
      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count());
  return {{names_.to_allocate, devices}, {names_.allocated, devices},     {names_.vgpu_node, allocation.node},
          {names_.vgpu_time, seconds},   {names_.bind_phase, "allocating"}, {names_.bind_time, seconds}};
}

RecordedAllocation HamiContract::recorded_allocation(const Pod& pod, const NodeSpec* node) const {
  RecordedAllocation out;
  const std::string* record = pod.meta.annotation(names_.allocated);
  if (record == nullptr) return out;
  auto fail = [&](std::string why) {
    out.kind = RecordedAllocation::Kind::kMalformed;
    out.problem = "annotation " + names_.allocated + ": " + std::move(why);
    return out;
  };
  const std::string* on = pod.meta.annotation(names_.vgpu_node);
  if (on != nullptr && *on != pod.node_name) {
    out.kind = RecordedAllocation::Kind::kMalformed;
    out.problem = "annotation " + names_.vgpu_node + " names node " + *on + " but the pod is bound to " + pod.node_name;
    return out;
  }
  auto entries = parse_hami_devices(*record);
  if (!entries) return fail(entries.message());
  // Positional entries (as written by HAMi's scheduler and by fracpack)
  // name their container; otherwise the non-empty ones go to the
  // containers that ask for GPUs, in order (DecodePodDevices drops empties).
  std::vector<const Container*> owners;
  if (entries->size() == pod.containers.size()) {
    for (const Container& c : pod.containers) owners.push_back(&c);
  } else {
    std::vector<std::vector<HamiDevice>> nonempty;
    for (auto& e : *entries) {
      if (!e.empty()) nonempty.push_back(std::move(e));
    }
    for (const Container& c : pod.containers) {
      const bool asks = std::any_of(resources_.begin(), resources_.end(), [&](const std::string& r) {
        return find(c.limits, r) != nullptr || find(c.requests, r) != nullptr;
      });
      if (asks) owners.push_back(&c);
    }
    if (owners.size() != nonempty.size()) {
      return fail(std::to_string(nonempty.size()) + " device entries for " + std::to_string(owners.size()) +
                  " containers asking for GPUs");
    }
    *entries = std::move(nonempty);
  }
  if (node == nullptr) {
    out.kind = RecordedAllocation::Kind::kNeedsNode;
    return out;
  }
  Allocation a;
  a.node = pod.node_name;
  for (size_t i = 0; i < entries->size(); ++i) {
    if ((*entries)[i].empty()) continue;
    ContainerAllocation c;
    c.name = owners[i]->name;
    for (const HamiDevice& d : (*entries)[i]) {
      const Card* card = nullptr;
      for (const Card& k : node->cards) {
        if (k.uuid == d.uuid) card = &k;
      }
      if (card == nullptr) return fail("card " + d.uuid + " is not among node " + pod.node_name + "'s registered cards");
      for (const CardShare& s : c.cards) {
        if (s.index == card->index) return fail("container " + c.name + " names card " + d.uuid + " twice");
      }
      c.cards.push_back(CardShare{card->index, d.uuid, d.memory_mib, d.cores * 10});
    }
    a.containers.push_back(std::move(c));
  }
  out.kind = RecordedAllocation::Kind::kAllocation;
  out.allocation = std::move(a);
  return out;
}

}  // namespace fracpack::k8s
