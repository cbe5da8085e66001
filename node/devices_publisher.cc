#include "node/devices_publisher.h"

#include "common/json/write.h"
#include "k8s/objects.h"

namespace fracpack::node {

DevicesPublisher::DevicesPublisher(k8s::ClientConfig client, std::string node, std::string annotation)
    : client_(std::move(client)), node_(std::move(node)), annotation_(std::move(annotation)) {}

Result<bool> DevicesPublisher::publish(const std::string& value, std::chrono::milliseconds timeout) {
  const std::string path = "/api/v1/nodes/" + k8s::url_encode(node_);
  auto got = client_.request("GET", path, {}, "application/json", timeout);
  if (!got) return Error{"reading node " + node_ + ": " + got.message()};
  if (got->status == 404) return Error{"node " + node_ + " does not exist (is the node name right?)"};
  if (got->status != 200) return Error{"reading node " + node_ + ": " + std::to_string(got->status) + " " + k8s::api_error_message(*got)};
  k8s::Selection only;
  only.annotation_prefixes = {annotation_};
  auto n = k8s::parse_node(got->body, only);
  if (!n) return Error{"reading node " + node_ + ": " + n.message()};
  const std::string* current = n->meta.annotation(annotation_);
  if (current != nullptr && *current == value) return false;

  std::string body = "{\"metadata\":{\"annotations\":{";
  append_json_string(body, annotation_);
  body += ':';
  append_json_string(body, value);
  body += "}}}";
  auto r = client_.request("PATCH", path, body, "application/merge-patch+json", timeout);
  if (!r) return Error{"writing node " + node_ + "'s " + annotation_ + ": " + r.message()};
  if (r->status != 200) {
    return Error{"writing node " + node_ + "'s " + annotation_ + ": " + std::to_string(r->status) + " " + k8s::api_error_message(*r)};
  }
  return true;
}

}  // namespace fracpack::node
