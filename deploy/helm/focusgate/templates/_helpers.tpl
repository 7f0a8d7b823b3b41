{{- define "focusgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "focusgate.fullname" -}}
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

{{- define "focusgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "focusgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "focusgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "focusgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "focusgate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "focusgate.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret holding the credentials: an existing one, or the chart's. */}}
{{- define "focusgate.secretName" -}}
{{- default (include "focusgate.fullname" .) .Values.auth.existingSecret }}
{{- end }}

{{/* Whether the pods get a keys file. */}}
{{- define "focusgate.clientKeys" -}}
{{- if or .Values.auth.existingSecret .Values.auth.clientKeys }}true{{ end }}
{{- end }}

{{- define "focusgate.redisName" -}}
{{- printf "%s-redis" (include "focusgate.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "focusgate.gracePeriod" -}}
{{- if .Values.terminationGracePeriodSeconds }}
{{- .Values.terminationGracePeriodSeconds }}
{{- else }}
{{- add .Values.shutdownTimeoutSeconds .Values.preStopSleepSeconds 10 }}
{{- end }}
{{- end }}

{{/* Refuse values that the gateway would refuse at start-up. */}}
{{- define "focusgate.validate" -}}
{{- if and (not .Values.auth.existingSecret) (or .Values.auth.upstreamApiKey .Values.auth.anthropicApiKey .Values.auth.geminiApiKey) (not .Values.auth.clientKeys) (not .Values.auth.allowUnauthenticated) }}
{{- fail "an upstream key (auth.upstreamApiKey, auth.anthropicApiKey or auth.geminiApiKey) is set without auth.clientKeys: anyone reaching the gateway would spend it. Set auth.clientKeys (lines name:key), or auth.allowUnauthenticated=true if an authenticating proxy stands in front." }}
{{- end }}
{{- if le (int (include "focusgate.gracePeriod" .)) (int (add .Values.shutdownTimeoutSeconds .Values.preStopSleepSeconds)) }}
{{- fail "terminationGracePeriodSeconds must be longer than shutdownTimeoutSeconds + preStopSleepSeconds, or open streams are killed mid-answer." }}
{{- end }}
{{- if and .Values.redis.deploy .Values.redis.url }}
{{- fail "set either redis.url (an existing Redis) or redis.deploy (a trial Redis), not both." }}
{{- end }}
{{- end }}

{{/* The gateway's pods, told apart from the trial Redis of the same release. */}}
{{- define "focusgate.gatewaySelectorLabels" -}}
{{ include "focusgate.selectorLabels" . }}
app.kubernetes.io/component: gateway
{{- end }}
