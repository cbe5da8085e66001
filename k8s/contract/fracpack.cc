#include "k8s/contract/fracpack.h"

#include <array>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "k8s/contract/card_list.h"
#include "k8s/contract/kubernetes_rules.h"
#include "k8s/json.h"
#include "common/json_write.h"
#include "scheduling/fit.h"
#include "scheduling/quantity.h"

namespace fracpack::k8s {

using scheduling::Allocation;
using scheduling::Card;
using scheduling::CardShare;
using scheduling::ContainerAllocation;
using scheduling::ContainerRequest;
using scheduling::NodeSpec;
using scheduling::PodRequest;

Selection ContractNames::selection() const {
  Selection s;
  std::set<std::string> annotation_prefixes;
  for (const std::string* a : {&model, &uuid, &uuid_exclude, &numa, &devices, &cordon, &allocation, &indices}) {
    annotation_prefixes.insert(name_domain(*a));
  }
  s.annotation_prefixes.assign(annotation_prefixes.begin(), annotation_prefixes.end());
  s.label_prefixes = {gfd_count, gfd_memory, gfd_product};
  s.resources = {"cpu", "memory", gpu, gpu_memory, gpu_memory_percent, gpu_cores};
  return s;
}

namespace {

// A container's share request, or none (cards == 0) when it names nothing.
Result<ContainerRequest> container_request(const Container& c, bool init, const ContractNames& n) {
  ContainerRequest r;
  r.name = c.name;
  r.init = init;
  bool has_count = false, has_mem = false, has_pct = false, has_cores = false;
  auto count = extended_resource(c, n.gpu, has_count);
  if (!count) return count.error();
  auto mem = extended_resource(c, n.gpu_memory, has_mem);
  if (!mem) return mem.error();
  auto pct = extended_resource(c, n.gpu_memory_percent, has_pct);
  if (!pct) return pct.error();
  auto cores = extended_resource(c, n.gpu_cores, has_cores);
  if (!cores) return cores.error();
  const bool shares = has_mem || has_pct || has_cores;
  if (!has_count && !shares) return r;  // no GPU for this container
  if (has_mem && has_pct) {
    return Error{"resources.limits: " + n.gpu_memory + " and " + n.gpu_memory_percent + " are alternatives; name one"};
  }
  if (has_count && *count == 0) {
    if (shares) return Error{"resources.limits[" + n.gpu + "] is 0 but a GPU share is named"};
    return r;  // "0 GPUs": nothing asked
  }
  const int64_t cards = has_count ? *count : 1;
  if (cards > static_cast<int64_t>(scheduling::Picks::kMax)) {
    return Error{"resources.limits[" + n.gpu + "]: " + std::to_string(cards) + " cards is more than the maximum of 64"};
  }
  if (has_mem && *mem < 1) return Error{"resources.limits[" + n.gpu_memory + "]: must be at least 1 (MiB)"};
  if (has_mem && *mem > (int64_t{1} << 40)) return Error{"resources.limits[" + n.gpu_memory + "]: out of range (MiB)"};
  if (has_pct && (*pct < 1 || *pct > 100)) {
    return Error{"resources.limits[" + n.gpu_memory_percent + "]: must be 1..100 (percent), got " + std::to_string(*pct)};
  }
  if (has_cores && (*cores < 1 || *cores > 100)) {
    return Error{"resources.limits[" + n.gpu_cores + "]: must be 1..100 (percent), got " + std::to_string(*cores)};
  }
  r.cards = static_cast<int>(cards);
  if (!shares) {  // a bare count: whole, exclusive cards
    r.cores = scheduling::kCardMilli;
    r.memory_percent = 100;
    return r;
  }
  r.memory_mib = has_mem ? *mem : 0;
  r.memory_percent = has_pct ? static_cast<int>(*pct) : 0;
  r.cores = has_cores ? static_cast<int>(*cores) * 10 : 0;
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

FracpackContract::FracpackContract(ContractNames names, ForeignProfiles foreign)
    : names_(std::move(names)), foreign_(std::move(foreign)), selection_(names_.selection()) {
  foreign_.extend(selection_);
}

bool FracpackContract::requests_gpu(const Pod& pod) const { return names_any_resource(pod, names_.gpu_resources()); }

Result<PodRequest> FracpackContract::pod_request(const Pod& pod) const {
  const ContractNames& n = names_;
  const std::string who = "pod " + pod.key();
  if (Status s = foreign_.check_pod(pod, n.gpu_resources()); !s.ok()) return Error{s.message()};
  PodRequest r;
  if (Status s = pod_facts(pod, r); !s.ok()) return Error{s.message()};

  size_t total_cards = 0;
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
  }
  for (const Container& c : pod.containers) {
    if (Status s = add(c, false); !s.ok()) return Error{s.message()};
  }
  if (total_cards > scheduling::Picks::kMax) {
    return Error{who + ": asks for " + std::to_string(total_cards) + " card shares in all; the maximum is 64"};
  }

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
  return r;
}

namespace {

Result<std::vector<Card>> parse_devices(std::string_view text) {
  std::vector<Card> cards;
  Status s = Status::Ok();
  simdjson::ondemand::parser parser;
  simdjson::padded_string padded(text);
  simdjson::ondemand::document doc;
  if (auto e = parser.iterate(padded).get(doc)) return json::syntax_error(e, "");
  simdjson::ondemand::array arr;
  if (auto e = doc.get_array().get(arr)) {
    if (e == simdjson::INCORRECT_TYPE) return Error{"expected a JSON array of cards"};
    return json::syntax_error(e, "");
  }
  size_t i = 0;
  for (auto er : arr) {
    const std::string where = "card [" + std::to_string(i++) + "]";
    simdjson::ondemand::object obj;
    if (er.get_object().get(obj)) return Error{where + ": expected an object"};
    Card c;
    bool has_index = false, has_memory = false;
    for (auto fr : obj) {
      simdjson::ondemand::field f;
      if (auto e = std::move(fr).get(f)) return json::syntax_error(e, where);
      std::string_view key;
      if (auto e = f.unescaped_key().get(key)) return json::syntax_error(e, where);
      auto v = f.value();
      if (key == "index") {
        int64_t x = 0;
        if (v.get_int64().get(x) || x < 0 || x > 1023) return Error{where + ": index must be an integer 0..1023"};
        c.index = static_cast<int>(x);
        has_index = true;
      } else if (key == "uuid") {
        std::string_view u;
        if (v.get_string().get(u)) return Error{where + ": uuid must be a string"};
        c.uuid = std::string(u);
      } else if (key == "model") {
        std::string_view m;
        if (v.get_string().get(m)) return Error{where + ": model must be a string"};
        c.model = std::string(m);
      } else if (key == "memoryMiB") {
        int64_t x = 0;
        if (v.get_int64().get(x) || x < 1 || x > (int64_t{1} << 30)) {
          return Error{where + ": memoryMiB must be a positive integer"};
        }
        c.memory_mib = x;
        has_memory = true;
      } else if (key == "numa") {
        int64_t x = 0;
        if (v.get_int64().get(x) || x < 0 || x > 255) return Error{where + ": numa must be an integer 0..255"};
        c.numa = static_cast<int>(x);
      } else if (key == "healthy") {
        if (v.get_bool().get(c.healthy)) return Error{where + ": healthy must be true or false"};
      }
    }
    if (!has_index) return Error{where + ": index is required"};
    if (!has_memory) return Error{where + ": memoryMiB is required"};
    cards.push_back(std::move(c));
  }
  if (!doc.current_location().error()) return Error{"trailing content after the array"};
  return cards;
}

}  // namespace

Result<NodeSpec> FracpackContract::node_spec(const Node& node) const {
  const ContractNames& n = names_;
  const std::string who = "node " + node.meta.name;
  NodeSpec spec;
  if (Status s = node_allocatable(node, spec); !s.ok()) return Error{s.message()};
  // Another agent's registration (GFD labels are on every NVIDIA node and
  // prove nothing): two agents would hand out the same cards.
  if (std::string owner = foreign_.node_owner(node); !owner.empty()) {
    spec.excluded = std::move(owner);
    return spec;
  }

  if (const std::string* devices = node.meta.annotation(n.devices)) {
    auto cards = parse_devices(*devices);
    if (!cards) return Error{who + ": annotation " + n.devices + ": " + cards.message()};
    spec.cards = std::move(*cards);
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
  if (const std::string* cordon = node.meta.annotation(n.cordon)) {
    if (Status s = apply_cordons(spec, *cordon, who, n.cordon); !s.ok()) return Error{s.message()};
  }
  return spec;
}

namespace {

std::string cores_text(int milli) {
  if (milli % 10 == 0) return std::to_string(milli / 10);
  return std::to_string(milli / 10) + "." + std::to_string(milli % 10);
}

}  // namespace

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

std::string format_devices(const std::vector<Card>& cards) {
  std::string out = "[";
  for (size_t i = 0; i < cards.size(); ++i) {
    const Card& c = cards[i];
    if (i > 0) out += ",";
    out += "{\"index\":" + std::to_string(c.index) + ",\"uuid\":";
    append_json_string(out, c.uuid);
    out += ",\"model\":";
    append_json_string(out, c.model);
    out += ",\"memoryMiB\":" + std::to_string(c.memory_mib) + ",\"numa\":" + std::to_string(c.numa) +
           ",\"healthy\":" + (c.healthy ? "true" : "false") + "}";
  }
  return out + "]";
}

Result<Allocation> parse_allocation(std::string_view text) {
  simdjson::ondemand::parser parser;
  simdjson::padded_string padded(text);
  simdjson::ondemand::document doc;
  if (auto e = parser.iterate(padded).get(doc)) return json::syntax_error(e, "");
  simdjson::ondemand::object root;
  if (auto e = doc.get_object().get(root)) {
    if (e == simdjson::INCORRECT_TYPE) return Error{"expected a JSON object"};
    return json::syntax_error(e, "");
  }
  Allocation a;
  bool has_node = false, has_containers = false;
  for (auto fr : root) {
    simdjson::ondemand::field f;
    if (auto e = std::move(fr).get(f)) return json::syntax_error(e, "");
    std::string_view key;
    if (auto e = f.unescaped_key().get(key)) return json::syntax_error(e, "");
    auto v = f.value();
    if (key == "node") {
      std::string_view node;
      if (v.get_string().get(node) || node.empty()) return Error{"node must be a non-empty string"};
      a.node = std::string(node);
      has_node = true;
    } else if (key == "containers") {
      has_containers = true;
      simdjson::ondemand::array arr;
      if (v.get_array().get(arr)) return Error{"containers must be an array"};
      size_t ci = 0;
      for (auto cr : arr) {
        const std::string where = "containers[" + std::to_string(ci++) + "]";
        simdjson::ondemand::object co;
        if (cr.get_object().get(co)) return Error{where + ": expected an object"};
        ContainerAllocation c;
        bool has_cards = false;
        for (auto cfr : co) {
          simdjson::ondemand::field cf;
          if (auto e = std::move(cfr).get(cf)) return json::syntax_error(e, where);
          std::string_view ck;
          if (auto e = cf.unescaped_key().get(ck)) return json::syntax_error(e, where);
          auto cv = cf.value();
          if (ck == "name") {
            std::string_view name;
            if (cv.get_string().get(name)) return Error{where + ".name must be a string"};
            c.name = std::string(name);
          } else if (ck == "init") {
            if (cv.get_bool().get(c.init)) return Error{where + ".init must be true or false"};
          } else if (ck == "cards") {
            has_cards = true;
            simdjson::ondemand::array cards;
            if (cv.get_array().get(cards)) return Error{where + ".cards must be an array"};
            size_t k = 0;
            for (auto sr : cards) {
              const std::string sw = where + ".cards[" + std::to_string(k++) + "]";
              simdjson::ondemand::object so;
              if (sr.get_object().get(so)) return Error{sw + ": expected an object"};
              CardShare s;
              bool has_index = false;
              for (auto sfr : so) {
                simdjson::ondemand::field sf;
                if (auto e = std::move(sfr).get(sf)) return json::syntax_error(e, sw);
                std::string_view sk;
                if (auto e = sf.unescaped_key().get(sk)) return json::syntax_error(e, sw);
                auto sv = sf.value();
                if (sk == "index") {
                  int64_t x = 0;
                  if (sv.get_int64().get(x) || x < 0 || x > 1023) return Error{sw + ".index must be an integer 0..1023"};
                  s.index = static_cast<int>(x);
                  has_index = true;
                } else if (sk == "uuid") {
                  std::string_view u;
                  if (sv.get_string().get(u)) return Error{sw + ".uuid must be a string"};
                  s.uuid = std::string(u);
                } else if (sk == "memoryMiB") {
                  int64_t x = 0;
                  if (sv.get_int64().get(x) || x < 0 || x > (int64_t{1} << 40)) {
                    return Error{sw + ".memoryMiB must be a non-negative integer"};
                  }
                  s.memory_mib = x;
                } else if (sk == "cores") {
                  double x = 0;
                  if (sv.get_double().get(x) || !(x >= 0 && x <= 100)) return Error{sw + ".cores must be a number 0..100"};
                  const double milli = x * 10;
                  if (std::abs(milli - std::round(milli)) > 1e-6) return Error{sw + ".cores has more than one decimal"};
                  s.cores = static_cast<int>(std::lround(milli));
                }
              }
              if (!has_index) return Error{sw + ".index is required"};
              c.cards.push_back(std::move(s));
            }
          }
        }
        if (!has_cards) return Error{where + ".cards is required"};
        std::set<int> seen;
        for (const auto& s : c.cards) {
          if (!seen.insert(s.index).second) return Error{where + ": card " + std::to_string(s.index) + " listed twice"};
        }
        a.containers.push_back(std::move(c));
      }
    }
  }
  if (!doc.current_location().error()) return Error{"trailing content after the object"};
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
