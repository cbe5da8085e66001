// libFuzzer: the watch stream. The bytes are fed to the object splitter in
// pieces (the first byte sets the piece size, as chunk boundaries fall
// anywhere), each object is parsed as a watch event, and its object as a
// pod and as a node.
#include <cstdint>
#include <string>

#include "k8s/contract/fracpack.h"
#include "common/json/stream.h"
#include "k8s/objects.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const fracpack::k8s::Selection selection = fracpack::k8s::ContractNames{}.selection();
  const size_t piece = 1 + data[0] % 64;
  const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  fracpack::ObjectSplitter splitter;
  for (size_t at = 0; at < stream.size(); at += piece) {
    auto s = splitter.feed(stream.substr(at, piece), [&](std::string_view object) {
      if (auto e = fracpack::k8s::parse_watch_event(object)) {
        (void)fracpack::k8s::parse_pod(e->object, selection);
        (void)fracpack::k8s::parse_node(e->object, selection);
      }
      return fracpack::Status::Ok();
    });
    if (!s.ok()) break;
  }
  return 0;
}
