#include "k8s/auth.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <optional>
#include <sstream>
#include <vector>

#include "common/file_io.h"

namespace fracpack::k8s {
namespace {

std::string dir_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// kubeconfig paths are relative to the file that names them.
std::string resolve(const std::string& path, const std::string& base_dir) {
  if (path.empty() || path[0] == '/') return path;
  return base_dir + "/" + path;
}

struct Named {
  YAML::Node node;
  std::string dir;  // of the file it came from
};

// One entry of clusters/users/contexts by name, first file first.
std::optional<Named> find_named(const std::vector<std::pair<YAML::Node, std::string>>& files, const char* list,
                                const char* field, const std::string& name) {
  for (const auto& [doc, dir] : files) {
    const YAML::Node items = doc[list];
    if (!items || !items.IsSequence()) continue;
    for (const auto& item : items) {
      if (item["name"] && item["name"].as<std::string>("") == name && item[field]) return Named{item[field], dir};
    }
  }
  return std::nullopt;
}

std::string str(const YAML::Node& n, const char* key) {
  const YAML::Node v = n[key];
  return v && v.IsScalar() ? v.as<std::string>() : std::string();
}

}  // namespace

Result<std::string> base64_decode(std::string_view text) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=' || c == '\n' || c == '\r' || c == ' ') continue;
    const int v = val(c);
    if (v < 0) return Error{"invalid base64"};
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

Result<ClientConfig> in_cluster_config(const std::string& sa_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0' || port == nullptr || *port == '\0') {
    return Error{"not running in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set (use --kubeconfig or --snapshot)"};
  }
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6
  auto endpoint = Endpoint::parse("https://" + h + ":" + port);
  if (!endpoint) return endpoint.error();
  ClientConfig c;
  c.endpoint = *endpoint;
  auto ca = read_file(sa_dir + "/ca.crt");
  if (!ca) return Error{"in-cluster: " + ca.message()};
  c.tls.ca_pem = *ca;
  c.token = TokenSource::file(sa_dir + "/token");
  if (auto t = c.token->token(); !t) return Error{"in-cluster: " + t.message()};
  return c;
}

Result<ClientConfig> kubeconfig_config(const std::string& path, const std::string& context_name) {
  std::vector<std::string> paths;
  if (!path.empty()) {
    paths.push_back(path);
  } else if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    std::stringstream ss(env);
    for (std::string p; std::getline(ss, p, ':');) {
      if (!p.empty()) paths.push_back(p);
    }
  } else if (const char* home = std::getenv("HOME"); home != nullptr) {
    paths.push_back(std::string(home) + "/.kube/config");
  }
  if (paths.empty()) return Error{"no kubeconfig: give --kubeconfig or set KUBECONFIG"};

  std::vector<std::pair<YAML::Node, std::string>> files;
  for (const auto& p : paths) {
    auto text = read_file(p);
    if (!text) {
      if (paths.size() > 1) continue;  // client-go skips missing files of a list
      return text.error();
    }
    try {
      files.emplace_back(YAML::Load(*text), dir_of(p));
    } catch (const YAML::Exception& e) {
      return Error{p + ": not valid YAML: " + e.what()};
    }
  }
  if (files.empty()) return Error{"none of the kubeconfig files could be read"};

  std::string ctx = context_name;
  for (const auto& [doc, dir] : files) {
    if (!ctx.empty()) break;
    ctx = str(doc, "current-context");
  }
  if (ctx.empty()) return Error{"kubeconfig has no current-context"};
  auto context = find_named(files, "contexts", "context", ctx);
  if (!context) return Error{"kubeconfig has no context \"" + ctx + "\""};
  const std::string cluster_name = str(context->node, "cluster");
  const std::string user_name = str(context->node, "user");
  auto cluster = find_named(files, "clusters", "cluster", cluster_name);
  if (!cluster) return Error{"kubeconfig context \"" + ctx + "\" names cluster \"" + cluster_name + "\", which is not defined"};

  ClientConfig c;
  auto endpoint = Endpoint::parse(str(cluster->node, "server"));
  if (!endpoint) return Error{"kubeconfig cluster \"" + cluster_name + "\": " + endpoint.message()};
  c.endpoint = *endpoint;
  if (const std::string data = str(cluster->node, "certificate-authority-data"); !data.empty()) {
    auto pem = base64_decode(data);
    if (!pem) return Error{"kubeconfig cluster \"" + cluster_name + "\": certificate-authority-data: " + pem.message()};
    c.tls.ca_pem = *pem;
  } else if (const std::string file = str(cluster->node, "certificate-authority"); !file.empty()) {
    auto pem = read_file(resolve(file, cluster->dir));
    if (!pem) return Error{"kubeconfig cluster \"" + cluster_name + "\": certificate-authority: " + pem.message()};
    c.tls.ca_pem = *pem;
  }
  c.tls.insecure_skip_verify = str(cluster->node, "insecure-skip-tls-verify") == "true";
  c.tls.server_name = str(cluster->node, "tls-server-name");
  if (cluster->node["proxy-url"]) {
    return Error{"kubeconfig cluster \"" + cluster_name + "\": proxy-url is not supported"};
  }

  if (user_name.empty()) return c;
  auto user = find_named(files, "users", "user", user_name);
  if (!user) return Error{"kubeconfig context \"" + ctx + "\" names user \"" + user_name + "\", which is not defined"};
  const YAML::Node& u = user->node;
  const std::string who = "kubeconfig user \"" + user_name + "\": ";
  if (u["exec"]) return Error{who + "exec credential plugins are not supported; use a token, tokenFile or a client certificate"};
  if (u["auth-provider"]) return Error{who + "auth-provider plugins are not supported; use a token, tokenFile or a client certificate"};
  if (u["username"] || u["password"]) return Error{who + "basic authentication is not supported"};
  if (const std::string t = str(u, "token"); !t.empty()) {
    c.token = TokenSource::fixed(t);  // token wins over tokenFile
  } else if (const std::string f = str(u, "tokenFile"); !f.empty()) {
    c.token = TokenSource::file(resolve(f, user->dir));
    if (auto t2 = c.token->token(); !t2) return Error{who + t2.message()};
  }
  auto pem_field = [&](const char* data_key, const char* file_key, std::string& out) -> Status {
    if (const std::string data = str(u, data_key); !data.empty()) {
      auto pem = base64_decode(data);
      if (!pem) return Error{who + data_key + ": " + pem.message()};
      out = *pem;
    } else if (const std::string file = str(u, file_key); !file.empty()) {
      auto pem = read_file(resolve(file, user->dir));
      if (!pem) return Error{who + file_key + ": " + pem.message()};
      out = *pem;
    }
    return Status::Ok();
  };
  if (Status s = pem_field("client-certificate-data", "client-certificate", c.tls.client_cert_pem); !s.ok()) return Error{s.message()};
  if (Status s = pem_field("client-key-data", "client-key", c.tls.client_key_pem); !s.ok()) return Error{s.message()};
  if (c.tls.client_cert_pem.empty() != c.tls.client_key_pem.empty()) {
    return Error{who + "a client certificate needs its key and a key its certificate"};
  }
  return c;
}

Result<ClientConfig> cluster_client_config(const std::string& kubeconfig) {
  auto cc = kubeconfig.empty() ? in_cluster_config() : kubeconfig_config(kubeconfig);
  if (!cc) return Error{(kubeconfig.empty() ? std::string("in-cluster credentials: ") : "kubeconfig " + kubeconfig + ": ") + cc.message()};
  return cc;
}

}  // namespace fracpack::k8s
