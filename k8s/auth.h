// Where the API server is and how to authenticate to it
// (../shared/reference/kubernetes-protocol.md §6): the in-cluster service account, or a
// kubeconfig file (--kubeconfig, $KUBECONFIG, ~/.kube/config).
#pragma once

#include <string>

#include "k8s/api_client.h"
#include "common/result.h"

namespace fracpack::k8s {

inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

// KUBERNETES_SERVICE_HOST/PORT, the service account token (re-read about
// every 50 s and after any 401) and ca.crt. An error when not in a cluster.
Result<ClientConfig> in_cluster_config(const std::string& service_account_dir = kServiceAccountDir);

// A kubeconfig: `path` if given, else $KUBECONFIG (':'-separated files,
// merged: the first file to set a value wins), else ~/.kube/config. The
// current context's cluster and user: server, certificate-authority(-data),
// insecure-skip-tls-verify, tls-server-name, token, tokenFile,
// client-certificate(-data), client-key(-data). exec, auth-provider and
// basic auth are refused with a message saying so.
Result<ClientConfig> kubeconfig_config(const std::string& path = "", const std::string& context = "");

// What a command uses: `kubeconfig` when given, else the in-cluster
// account; the error names which one failed.
Result<ClientConfig> cluster_client_config(const std::string& kubeconfig);

// RFC 4648 base64 (the *-data fields).
Result<std::string> base64_decode(std::string_view text);

}  // namespace fracpack::k8s
