#include "scheduling/replay/openb.h"

#include <charconv>
#include <map>

namespace fracpack::replay {
namespace {

// Splits CSV text into lines of fields. The trace has no quoting.
std::vector<std::vector<std::string_view>> split_csv(std::string_view text) {
  std::vector<std::vector<std::string_view>> rows;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::vector<std::string_view> fields;
    size_t f = 0;
    while (true) {
      const size_t comma = line.find(',', f);
      fields.push_back(line.substr(f, comma == std::string_view::npos ? std::string_view::npos : comma - f));
      if (comma == std::string_view::npos) break;
      f = comma + 1;
    }
    rows.push_back(std::move(fields));
    pos = end + 1;
  }
  while (!rows.empty() && rows.back().size() == 1 && rows.back()[0].empty()) rows.pop_back();
  return rows;
}

Result<int64_t> parse_int(std::string_view s, size_t line, std::string_view column) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) {
    return Error{"line " + std::to_string(line) + ": column " + std::string(column) + ": \"" + std::string(s) +
                 "\" is not an integer"};
  }
  return v;
}

// Column index by header name, or an error naming the missing column.
Result<std::map<std::string, size_t, std::less<>>> header(const std::vector<std::string_view>& row,
                                                           std::initializer_list<std::string_view> required) {
  std::map<std::string, size_t, std::less<>> cols;
  for (size_t i = 0; i < row.size(); ++i) cols.emplace(std::string(row[i]), i);
  for (auto r : required) {
    if (!cols.contains(r)) return Error{"header lacks column \"" + std::string(r) + "\""};
  }
  return cols;
}

}  // namespace

Result<std::vector<OpenbNode>> parse_openb_nodes(std::string_view csv) {
  auto rows = split_csv(csv);
  if (rows.empty()) return Error{"empty node list"};
  auto cols = header(rows[0], {"sn", "cpu_milli", "memory_mib", "gpu", "model"});
  if (!cols) return cols.error();
  std::vector<OpenbNode> out;
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const size_t line = i + 1;
    if (r.size() < cols->size()) return Error{"line " + std::to_string(line) + ": too few columns"};
    OpenbNode n;
    n.name = std::string(r[cols->at("sn")]);
    if (n.name.empty()) return Error{"line " + std::to_string(line) + ": empty sn"};
    auto cpu = parse_int(r[cols->at("cpu_milli")], line, "cpu_milli");
    auto mem = parse_int(r[cols->at("memory_mib")], line, "memory_mib");
    auto gpu = parse_int(r[cols->at("gpu")], line, "gpu");
    if (!cpu) return cpu.error();
    if (!mem) return mem.error();
    if (!gpu) return gpu.error();
    if (*cpu < 0 || *mem < 0 || *gpu < 0 || *gpu > 64) {
      return Error{"line " + std::to_string(line) + ": values out of range"};
    }
    n.cpu_milli = *cpu;
    n.memory_mib = *mem;
    n.gpus = static_cast<int>(*gpu);
    n.model = std::string(r[cols->at("model")]);
    out.push_back(std::move(n));
  }
  return out;
}

Result<std::vector<OpenbPod>> parse_openb_pods(std::string_view csv) {
  auto rows = split_csv(csv);
  if (rows.empty()) return Error{"empty pod list"};
  auto cols = header(rows[0], {"name", "cpu_milli", "memory_mib", "num_gpu"});
  if (!cols) return cols.error();
  const bool has_milli = cols->contains("gpu_milli");
  const bool has_spec = cols->contains("gpu_spec");
  const bool has_times = cols->contains("creation_time") && cols->contains("deletion_time");
  std::vector<OpenbPod> out;
  out.reserve(rows.size());
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const size_t line = i + 1;
    if (r.size() < cols->size()) return Error{"line " + std::to_string(line) + ": too few columns"};
    OpenbPod p;
    p.name = std::string(r[cols->at("name")]);
    if (p.name.empty()) return Error{"line " + std::to_string(line) + ": empty name"};
    auto cpu = parse_int(r[cols->at("cpu_milli")], line, "cpu_milli");
    auto mem = parse_int(r[cols->at("memory_mib")], line, "memory_mib");
    auto num = parse_int(r[cols->at("num_gpu")], line, "num_gpu");
    if (!cpu) return cpu.error();
    if (!mem) return mem.error();
    if (!num) return num.error();
    if (*cpu < 0 || *mem < 0 || *num < 0 || *num > 64) {
      return Error{"line " + std::to_string(line) + ": values out of range"};
    }
    p.cpu_milli = *cpu;
    p.memory_mib = *mem;
    p.num_gpu = static_cast<int>(*num);
    if (p.num_gpu > 0) {
      // pod_csv_to_yaml.py: milli per GPU = gpu_milli if in (0, 1000], 1000 above, else 0;
      // a file without the column gets 1000.
      int64_t milli = 1000;
      if (has_milli) {
        auto m = parse_int(r[cols->at("gpu_milli")], line, "gpu_milli");
        if (!m) return m.error();
        milli = *m > 1000 ? 1000 : (*m > 0 ? *m : 0);
      }
      p.gpu_milli = static_cast<int>(milli);
      if (has_spec) {
        std::string joined;
        std::string_view spec = r[cols->at("gpu_spec")];
        size_t s = 0;
        while (s <= spec.size()) {
          const size_t bar = spec.find('|', s);
          const size_t e = bar == std::string_view::npos ? spec.size() : bar;
          if (e > s) joined += (joined.empty() ? "" : "|") + std::string(spec.substr(s, e - s));
          if (bar == std::string_view::npos) break;
          s = bar + 1;
        }
        p.gpu_spec = joined;
      }
    }
    if (has_times) {
      const std::string_view created = r[cols->at("creation_time")], deleted = r[cols->at("deletion_time")];
      if (!created.empty() && !deleted.empty()) {
        auto c = parse_int(created, line, "creation_time");
        auto d = parse_int(deleted, line, "deletion_time");
        if (!c) return c.error();
        if (!d) return d.error();
        if (*c < 0) return Error{"line " + std::to_string(line) + ": creation_time " + std::string(created) + " is negative"};
        if (*d < *c) {
          return Error{"line " + std::to_string(line) + ": deletion_time " + std::string(deleted) +
                       " is before creation_time " + std::string(created)};
        }
        p.creation_time = *c;
        p.deletion_time = *d;
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

int64_t nominal_memory_mib(std::string_view model) {
  static const std::map<std::string_view, int64_t> kMemory = {
      {"P100", 16384}, {"T4", 15360},    {"V100M16", 16384}, {"V100M32", 32768},
      {"A10", 24576},  {"G2", 32768},    {"G3", 32768},      {"A100", 81920}};
  auto it = kMemory.find(model);
  return it == kMemory.end() ? 16384 : it->second;
}

scheduling::NodeSpec to_node_spec(const OpenbNode& node, std::string name) {
  scheduling::NodeSpec s;
  s.name = std::move(name);
  s.cpu_milli = node.cpu_milli;
  s.memory_bytes = node.memory_mib << 20;
  for (int i = 0; i < node.gpus; ++i) {
    scheduling::Card c;
    c.index = i;
    c.model = node.model;
    c.memory_mib = nominal_memory_mib(node.model);
    s.cards.push_back(std::move(c));
  }
  return s;
}

scheduling::PodRequest to_pod_request(const OpenbPod& pod) {
  scheduling::PodRequest r;
  r.uid = pod.name;
  r.namespace_name = "openb";
  r.name = pod.name;
  r.cpu_milli = pod.cpu_milli;
  r.memory_bytes = pod.memory_mib << 20;
  if (pod.num_gpu > 0 && pod.gpu_milli > 0) {  // the simulator treats u = 0 as CPU-only
    scheduling::ContainerRequest c;
    c.name = "main";
    c.cards = pod.num_gpu;
    c.cores = pod.gpu_milli;
    r.containers.push_back(std::move(c));
    size_t s = 0;
    while (s < pod.gpu_spec.size()) {
      const size_t bar = pod.gpu_spec.find('|', s);
      const size_t e = bar == std::string::npos ? pod.gpu_spec.size() : bar;
      if (e > s) r.allowed_models.push_back(pod.gpu_spec.substr(s, e - s));
      if (bar == std::string::npos) break;
      s = bar + 1;
    }
  }
  return r;
}

}  // namespace fracpack::replay
