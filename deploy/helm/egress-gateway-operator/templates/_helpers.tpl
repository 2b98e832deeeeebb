{{/* Names, labels and the choices several templates share. */}}

{{- define "egw.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "egw.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "egw.selectorLabels" -}}
app.kubernetes.io/name: {{ include "egw.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "egw.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "egw.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: egress-gateway-operator
{{- end -}}

{{- define "egw.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "egw.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The namespace of the leader-election Lease (and of the Role that lets the operator use it). */}}
{{- define "egw.leaseNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.namespace -}}
{{- end -}}

{{/* The namespace of the agents' egw-agent-<node> Leases: a namespace of their own, so that the
     agents' right to write Leases there reaches no other Lease (the operator's leader-election
     Lease among them: RBAC cannot narrow a rule to one name per node). */}}
{{- define "egw.agentLeaseNamespace" -}}
{{- $ns := default (printf "%s-agents" .Release.Namespace | trunc 63 | trimSuffix "-") .Values.agent.leaseNamespace -}}
{{- if or (eq $ns .Release.Namespace) (eq $ns (include "egw.leaseNamespace" .)) -}}
{{- fail "agent.leaseNamespace must be a namespace of the agents' own: not the release namespace nor the leader-election Lease's (the agents may write every Lease in it)" -}}
{{- end -}}
{{- $ns -}}
{{- end -}}

{{/* "true" when the CEL-carrying CRDs are to be installed: API servers >= 1.25 know
     x-kubernetes-validations (beta in 1.25, on by default); older ones refuse those CRDs. */}}
{{- define "egw.celCRDs" -}}
{{- if eq .Values.crds.validation "cel" -}}
true
{{- else if eq .Values.crds.validation "plain" -}}
false
{{- else -}}
{{- semverCompare ">=1.25.0-0" .Capabilities.KubeVersion.Version -}}
{{- end -}}
{{- end -}}

{{/* "true" when a monitoring.coreos.com/v1 object of `kind` is to be rendered: enabled, and the
     API is served or the value forces it. Call with (dict "ctx" $ "v" .Values.monitoring.x "kind" "K"). */}}
{{- define "egw.renderMonitoring" -}}
{{- $served := .ctx.Capabilities.APIVersions.Has (printf "monitoring.coreos.com/v1/%s" .kind) -}}
{{- and .v.enabled (or .v.force $served) -}}
{{- end -}}

{{- define "egw.terminationGracePeriodSeconds" -}}
{{- $shutdown := int .Values.operator.gracefulShutdownTimeoutSeconds -}}
{{- $grace := int .Values.terminationGracePeriodSeconds -}}
{{- if eq $grace 0 -}}
{{- add $shutdown 15 -}}
{{- else if le $grace $shutdown -}}
{{- fail (printf "terminationGracePeriodSeconds (%d) must exceed operator.gracefulShutdownTimeoutSeconds (%d): the kubelet would kill the operator while it drains" $grace $shutdown) -}}
{{- else -}}
{{- $grace -}}
{{- end -}}
{{- end -}}

{{/* egw-agent's pods: labels of their own, so neither the operator's Deployment nor its metrics
     Service selects them. */}}
{{- define "egw.agentSelectorLabels" -}}
app.kubernetes.io/name: {{ include "egw.name" . }}-agent
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "egw.agentName" -}}
{{- printf "%s-agent" (include "egw.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "egw.agentServiceAccountName" -}}
{{- default (include "egw.agentName" .) .Values.agent.serviceAccount.name -}}
{{- end -}}
