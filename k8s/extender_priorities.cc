#include "k8s/extender_priorities.h"

#include "common/json/write.h"

namespace fracpack::k8s {

void write_score(char* at, int64_t score) {
  at[0] = score >= 10 ? static_cast<char>('0' + score / 10) : ' ';
  at[1] = static_cast<char>('0' + score % 10);
}

size_t append_host_priority(std::string& out, std::string_view host, int64_t score) {
  out += "{\"Host\":";
  append_json_string(out, host);
  out += ",\"Score\":";
  const size_t at = out.size();
  if (score >= 0 && score <= 10) {
    out += "  ";
    write_score(out.data() + at, score);
  } else {
    out += std::to_string(score);
  }
  out.push_back('}');
  return at;
}

std::string format_host_priorities(const std::vector<HostPriority>& list) {
  std::string out = "[";
  out.reserve(list.size() * 32 + 2);
  for (size_t i = 0; i < list.size(); ++i) {
    if (i) out.push_back(',');
    append_host_priority(out, list[i].host, list[i].score);
  }
  out.push_back(']');
  return out;
}

}  // namespace fracpack::k8s
