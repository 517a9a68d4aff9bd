{{/* SPDX-License-Identifier: Apache-2.0 */}}
{{/* gpushare chart: helpers (labels, images, gpushare.conf). */}}
{{- define "gpushare.labels" -}}
app.kubernetes.io/part-of: gpushare
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{- define "gpushare.nodeImage" -}}
{{ .Values.image.node.repository }}:{{ .Values.image.node.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "gpushare.extenderImage" -}}
{{ .Values.image.extender.repository }}:{{ .Values.image.extender.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* gpushare.conf of the agent: the chart's settings, then extraConfig */}}
{{- define "gpushare.conf" -}}
# gpushare.conf of the gpushare chart's agent (values: agent.*; docs: packaging/gpushare.conf.example)
[daemon]
socket = {{ .Values.agent.runtimeDir }}/gpushared.sock
runtime_dir = {{ .Values.agent.runtimeDir }}
state_dir = {{ .Values.agent.stateDir }}
shim = {{ .Values.agent.toolkitDir }}/libgpushare.so
enforce = {{ .Values.agent.enforce }}
{{- if .Values.agent.gpusim.enabled }}
nvml_library = /usr/libexec/gpushare/sim/libnvidia-ml.so.1
mps_control = /usr/libexec/gpushare/sim/nvidia-cuda-mps-control
{{- else }}
nvml_library = /driver-root{{ .Values.agent.nvmlLibrary }}
mps_control = /driver-root{{ .Values.agent.mpsControl }}
{{- end }}
[gpu:all]
mode = {{ .Values.agent.mode }}
overprovision = {{ .Values.agent.overprovision }}
reserve = {{ .Values.agent.reserve }}
{{ .Values.agent.extraConfig }}
{{- end -}}
