#include "k8s/workload_codec.h"

#include <cmath>

// A tree both ways: a cold file read whole; written with nlohmann's shortest round-trip doubles (write.h's %.6g would change them).
#include <nlohmann/json.hpp>

namespace fracpack::k8s {

std::string format_workload(const scheduling::ShapeCounts& w) {
  nlohmann::json shapes = nlohmann::json::array();
  for (const auto& [shape, count] : w.counts()) {
    nlohmann::json s = {{"cpuMilli", shape.cpu_milli}, {"cards", shape.cards}, {"count", count}};
    if (shape.cores % 10 == 0) {
      s["cores"] = shape.cores / 10;
    } else {
      s["cores"] = shape.cores / 10.0;
    }
    if (shape.memory_mib != 0) s["memoryMiB"] = shape.memory_mib;
    if (shape.memory_percent != 0) s["memoryPercent"] = shape.memory_percent;
    if (!shape.models.empty()) s["models"] = shape.models;
    if (const double memory = w.node_memory_mib(shape); memory != 0) s["nodeMemoryMiB"] = memory;
    shapes.push_back(std::move(s));
  }
  return nlohmann::json{{"shapes", shapes}}.dump();
}

Result<scheduling::ShapeCounts> parse_workload(std::string_view text) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) return Error{"invalid JSON"};
  if (!doc.is_object() || !doc.contains("shapes") || !doc["shapes"].is_array()) {
    return Error{"expected {\"shapes\": [...]}"};
  }
  scheduling::ShapeCounts out;
  size_t i = 0;
  for (const auto& s : doc["shapes"]) {
    const std::string where = "shapes[" + std::to_string(i++) + "]";
    if (!s.is_object()) return Error{where + ": expected an object"};
    auto num = [&](const char* key, bool required, double min, double max, double& v) -> Status {
      if (!s.contains(key)) {
        if (required) return Error{where + "." + key + " is required"};
        return Status::Ok();
      }
      if (!s[key].is_number()) return Error{where + "." + key + " must be a number"};
      v = s[key].get<double>();
      if (!(v >= min && v <= max)) return Error{where + "." + key + " is out of range"};
      return Status::Ok();
    };
    double cpu = 0, cards = 0, cores = 0, mem = 0, pct = 0, count = 0, node_mem = 0;
    for (const Status& st : {num("cpuMilli", true, 0, 1e12, cpu), num("cards", true, 0, 64, cards),
                             num("cores", false, 0, 100, cores), num("memoryMiB", false, 0, 1e12, mem),
                             num("memoryPercent", false, 0, 100, pct), num("count", true, 0, 1e15, count),
                             num("nodeMemoryMiB", false, 0, 1e12, node_mem)}) {
      if (!st.ok()) return Error{st.message()};
    }
    if (count <= 0) return Error{where + ".count must be positive"};
    scheduling::PodShape shape;
    shape.cpu_milli = static_cast<int64_t>(cpu);
    shape.cards = static_cast<int>(cards);
    shape.cores = static_cast<int>(std::lround(cores * 10));
    shape.memory_mib = static_cast<int64_t>(mem);
    shape.memory_percent = static_cast<int>(pct);
    if (s.contains("models")) {
      if (!s["models"].is_string()) return Error{where + ".models must be a string"};
      shape.models = s["models"].get<std::string>();
    }
    out.add(shape, count, node_mem);
  }
  if (out.empty()) return Error{"no shapes"};
  return out;
}

}  // namespace fracpack::k8s
