{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "multisched.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: release-qualified unless the release name already contains the chart name. */}}
{{- define "multisched.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "multisched.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "multisched.selectorLabels" -}}
app.kubernetes.io/name: {{ include "multisched.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "multisched.labels" -}}
helm.sh/chart: {{ include "multisched.chart" . }}
{{ include "multisched.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "multisched.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "multisched.fullname" .) .Values.serviceAccount.name }}
{{- else if .Values.serviceAccount.name }}
{{- .Values.serviceAccount.name }}
{{- else }}
{{- fail "serviceAccount.create=false needs serviceAccount.name: the scheduler's rights must not go to the namespace's default account" }}
{{- end }}
{{- end }}

{{- define "multisched.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* Several replicas need leader election so that only one binds pods. */}}
{{- define "multisched.leaderElect" -}}
{{- $enabled := .Values.leaderElection.enabled }}
{{- if kindIs "invalid" $enabled }}
{{- if gt (int .Values.replicas) 1 }}true{{ end }}
{{- else if $enabled }}true
{{- else if gt (int .Values.replicas) 1 }}
{{- fail "leaderElection.enabled=false with replicas > 1: every replica would schedule and bind at once" }}
{{- end }}
{{- end }}

{{/* The Lease: one per release (its namespace holds it); never a control-plane component's,
which the Role would then grant and the elector would take over. */}}
{{- define "multisched.leaseName" -}}
{{- $name := default (include "multisched.fullname" .) .Values.leaderElection.leaseName }}
{{- $namespace := .Release.Namespace }}
{{- $system := list "kube-scheduler" "kube-controller-manager" "cloud-controller-manager" }}
{{- if or (eq $namespace "kube-node-lease") (and (eq $namespace "kube-system") (or (has $name $system) (hasPrefix "apiserver-" $name) (hasPrefix "kube-apiserver-" $name))) }}
{{- fail (printf "leaderElection.leaseName: Lease %s/%s belongs to the control plane (kube-scheduler, kube-controller-manager, cloud-controller-manager, apiserver-* in kube-system; node heartbeats in kube-node-lease): multisched would take it over; choose another leaseName or release namespace" $namespace $name) }}
{{- end }}
{{- $name }}
{{- end }}

{{/* --reserved-scheduler-names: never empty, which would turn the operator's check off. */}}
{{- define "multisched.reservedSchedulerNames" -}}
{{- if not .Values.reservedSchedulerNames }}
{{- fail "reservedSchedulerNames is empty: that turns off the operator's refusal of other schedulers' names; keep default-scheduler in it" }}
{{- end }}
{{- join "," .Values.reservedSchedulerNames }}
{{- end }}

{{/* multisched keeps PodGroup and ElasticQuota status (needs the RBAC of schedulerPlugins.enabled). */}}
{{- define "multisched.groupStatus" -}}
{{- if and .Values.schedulerPlugins.enabled .Values.schedulerPlugins.statusControllers }}true{{ end }}
{{- end }}
