// A renderer for the subset of Helm's templates (Go text/template plus
// Sprig) that manifests/chart uses, so that CI can render the chart without
// helm (not packaged for Debian 12). Anything outside the subset is an
// error, never silently passed through, so the chart cannot drift into
// constructs this check does not understand.
//
// Subset: {{ .Values.a.b }}, {{ .Release.Namespace }}, {{ .Release.Name }},
// {{ .Chart.Name }}, {{ .Chart.AppVersion }}, "string literals", numbers;
// pipelines with |; functions quote, toYaml, indent N, nindent N,
// trimSuffix S, default D, eq A B, ne A B; {{ if }} {{ else }} {{ end }};
// the trim markers {{- and -}}; comments {{/* */}}. A missing value is an
// error (Helm would print "<no value>").
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

#include "common/result.h"

namespace fracpack::testing {

struct ChartContext {
  YAML::Node values;
  std::string release_name = "fracpack";
  std::string release_namespace = "fracpack-system";
  std::string chart_name = "fracpack";
  std::string chart_app_version;
};

Result<std::string> render_template(std::string_view text, const ChartContext& context);

// `overrides` merged into `base` (maps recursively; anything else replaced),
// as helm's --values does.
YAML::Node merge_values(const YAML::Node& base, const YAML::Node& overrides);

}  // namespace fracpack::testing
