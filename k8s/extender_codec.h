// kube-scheduler's extender wire types (k8s.io/kube-scheduler/extender/v1;
// ../shared/reference/kubernetes-protocol.md §1): decoded from request bodies with simdjson,
// reading only what fracpack needs, and encoded as Go would encode them:
// PascalCase keys, every field present, null for nil.
//
// Decoding follows Go's encoding/json: keys match case-insensitively (an
// exact match wins), unknown keys are ignored, null leaves a field absent.
// A body that is not JSON, or a field of the wrong type, is an error naming
// the field.
//
// The one include of the extender's servers; each verb's types live apart:
//   extender_args.h          ExtenderArgs (filter and prioritize requests)
//   extender_filter_reply.h  ExtenderFilterResult
//   extender_priorities.h    HostPriorityList
//   extender_binding.h       ExtenderBindingArgs / ExtenderBindingResult
//   extender_preemption.h    ExtenderPreemptionArgs / ExtenderPreemptionResult
// and how their bodies are parsed, in extender_body.h (internal to them).
#pragma once

#include "k8s/extender_args.h"
#include "k8s/extender_binding.h"
#include "k8s/extender_filter_reply.h"
#include "k8s/extender_preemption.h"
#include "k8s/extender_priorities.h"
