{{/*
The prefix of every object's name: the release's name, with "-muster" added unless
it says muster already, so that the release `muster` gives the names the operator
expects by default (muster-operator, muster-webhooks, ...). The cluster-scoped
objects (ClusterRole, PriorityClass, policy, webhook configurations) carry it too,
so a second release never takes another's objects over.
*/}}
{{- define "muster.fullname" -}}
{{- if contains "muster" .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-muster" .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The Deployment, its ServiceAccount, roles, Lease, PriorityClass and budgets. */}}
{{- define "muster.operator" -}}
{{- include "muster.fullname" . }}-operator
{{- end -}}

{{/* The Service in front of the webhooks, and the name its certificate is for. */}}
{{- define "muster.service" -}}
{{- include "muster.fullname" . }}-webhooks
{{- end -}}

{{/* The Secret of the webhooks' CA and serving certificate. */}}
{{- define "muster.secret" -}}
{{- include "muster.fullname" . }}-webhook-tls
{{- end -}}

{{/* Both webhook configurations (one mutating, one validating) have this name. */}}
{{- define "muster.webhookConfiguration" -}}
{{- include "muster.fullname" . }}.scheduling.muster.dev
{{- end -}}

{{- define "muster.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/part-of: muster
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* What selects the operator's pods (the Deployment, Service, budget, policy). */}}
{{- define "muster.selector" -}}
app.kubernetes.io/name: {{ include "muster.operator" . }}
{{- end -}}

{{/* The ServiceAccount's user name, which the pod-rights policy judges. */}}
{{- define "muster.user" -}}
system:serviceaccount:{{ .Release.Namespace }}:{{ include "muster.operator" . }}
{{- end -}}

{{/* The dashboard's read-only ClusterRole, and its Service (with dashboard.enabled). */}}
{{- define "muster.dashboard" -}}
{{- include "muster.fullname" . }}-dashboard
{{- end -}}

{{/* The right to see the operator's page (with dashboard.enabled). */}}
{{- define "muster.dashboardViewer" -}}
{{- include "muster.fullname" . }}-dashboard-viewer
{{- end -}}

{{/* A label selector as CEL over `variables.labels` (a namespace's labels), for the
adoption-rights policy: matchLabels and matchExpressions (In, NotIn, Exists,
DoesNotExist), all of them required; an empty selector selects every namespace. */}}
{{- define "muster.adoptedNamespace" -}}
{{- $terms := list -}}
{{- range $key, $value := .matchLabels -}}
{{- $terms = append $terms (printf "(%s in variables.labels && variables.labels[%s] == %s)" (squote $key) (squote $key) (squote $value)) -}}
{{- end -}}
{{- range .matchExpressions -}}
{{- $key := squote .key -}}
{{- $values := list -}}
{{- range .values }}{{ $values = append $values (squote .) }}{{ end -}}
{{- $in := printf "(%s in variables.labels && variables.labels[%s] in [%s])" $key $key (join ", " $values) -}}
{{- if eq .operator "In" }}{{ $terms = append $terms $in }}
{{- else if eq .operator "NotIn" }}{{ $terms = append $terms (printf "!%s" $in) }}
{{- else if eq .operator "Exists" }}{{ $terms = append $terms (printf "%s in variables.labels" $key) }}
{{- else if eq .operator "DoesNotExist" }}{{ $terms = append $terms (printf "!(%s in variables.labels)" $key) }}
{{- else }}{{ fail (printf "adoption.namespaceSelector: unknown operator %q" .operator) }}
{{- end -}}
{{- end -}}
{{- join " && " $terms | default "true" -}}
{{- end -}}
