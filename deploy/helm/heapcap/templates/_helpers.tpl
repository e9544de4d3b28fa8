{{/* The prefix of every object's name: the release name when it says heapcap (release "heapcap" gives kustomize's names), else <release>-heapcap. */}}
{{- define "heapcap.fullname" -}}
{{- if contains "heapcap" .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-heapcap" .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Helm's bookkeeping labels, on object metadata only (never in selectors). */}}
{{- define "heapcap.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "heapcap.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* envFrom of every heapcap container: the shared settings and, when given, the S3 credentials. */}}
{{- define "heapcap.envFrom" -}}
- configMapRef: { name: {{ include "heapcap.fullname" . }}-env }
{{- if .Values.s3Credentials }}
- secretRef: { name: {{ include "heapcap.fullname" . }}-s3 }
{{- end }}
{{- end -}}

{{- define "heapcap.securityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities: { drop: [ALL] }
{{- end -}}
