{{/*
The webhook's TLS material as YAML (ca, cert, key: base64), one value per render so the Secret and
every caBundle agree. tls.mode helm: the Secret already in the cluster when there is one (an
upgrade keeps the CA the API server trusts), else a new CA and serving certificate for the
Service's DNS names. manual: only the CA given in tls.caBundle. cert-manager: nothing.
*/}}
{{- define "runway.tls" -}}
{{- if eq .Values.tls.mode "helm" -}}
{{- $secret := lookup "v1" "Secret" .Release.Namespace "runway-webhook-tls" -}}
{{- $data := dig "data" dict $secret -}}
{{- if and (index $data "ca.crt") (index $data "tls.crt") (index $data "tls.key") -}}
ca: {{ index $data "ca.crt" }}
cert: {{ index $data "tls.crt" }}
key: {{ index $data "tls.key" }}
{{- else -}}
{{- $names := list (printf "runway-webhook.%s.svc" .Release.Namespace) (printf "runway-webhook.%s.svc.cluster.local" .Release.Namespace) -}}
{{- $ca := genCA "runway-webhook-ca" (int .Values.tls.days) -}}
{{- $leaf := genSignedCert (first $names) nil $names (int .Values.tls.days) $ca -}}
ca: {{ $ca.Cert | b64enc }}
cert: {{ $leaf.Cert | b64enc }}
key: {{ $leaf.Key | b64enc }}
{{- end -}}
{{- else if eq .Values.tls.mode "manual" -}}
ca: {{ .Values.tls.caBundle | quote }}
{{- end -}}
{{- end -}}

{{/*
The standard labels (Helm's and Kubernetes' recommended ones), on every object the chart renders
and on every pod template (tools/chart.py adds them). runway.labels names the chart; an object
whose own app.kubernetes.io/name is a selector label (runway-webhook, ...) keeps it and gets
runway.releaseLabels only, so no selector changes and `helm upgrade` never has to replace one.
*/}}
{{- define "runway.releaseLabels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{- define "runway.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
{{ include "runway.releaseLabels" . }}
{{- end -}}
