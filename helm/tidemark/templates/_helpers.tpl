{{- define "tidemark.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "tidemark.fullname" -}}
{{- if .Values.fullnameOverride -}}{{ .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else -}}
{{- $name := include "tidemark.name" . -}}
{{- if contains $name .Release.Name -}}{{ .Release.Name | trunc 63 | trimSuffix "-" }}{{- else -}}{{ printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}
{{- end -}}

{{- define "tidemark.labels" -}}
app.kubernetes.io/name: {{ include "tidemark.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "tidemark.selector" -}}
app.kubernetes.io/name: {{ include "tidemark.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "tidemark.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "tidemark.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}{{ default (include "tidemark.fullname" .) .Values.serviceAccount.name }}{{- else -}}{{ default "default" .Values.serviceAccount.name }}{{- end -}}
{{- end -}}

{{- define "tidemark.eventIdSecretName" -}}
{{- if .Values.eventIdSecret.existingSecret -}}{{ .Values.eventIdSecret.existingSecret }}{{- else -}}{{ include "tidemark.fullname" . }}-event-id{{- end -}}
{{- end -}}

{{/* Kafka connection flags and env shared by every process (the names the CLI reads). */}}
{{- define "tidemark.kafkaArgs" -}}
- --prefix
- {{ .Values.topics.prefix | quote }}
{{- $tls := .Values.kafka.tls }}
{{- if $tls.enabled }}
- --tls
{{- if $tls.caSecret }}
- --tls-ca
- {{ printf "/etc/tidemark/kafka-ca/%s" $tls.caKey | quote }}
{{- end }}
{{- if $tls.clientSecret }}
- --tls-cert
- {{ printf "/etc/tidemark/kafka-client/%s" $tls.certKey | quote }}
- --tls-key
- {{ printf "/etc/tidemark/kafka-client/%s" $tls.keyKey | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The Secrets the Kafka flags above read, as volumes and their mounts. */}}
{{- define "tidemark.kafkaVolumes" -}}
{{- $tls := .Values.kafka.tls }}
{{- if and $tls.enabled $tls.caSecret }}
- name: kafka-ca
  secret: { secretName: {{ $tls.caSecret | quote }}, defaultMode: 0444 }
{{- end }}
{{- if and $tls.enabled $tls.clientSecret }}
- name: kafka-client
  secret: { secretName: {{ $tls.clientSecret | quote }}, defaultMode: 0400 }
{{- end }}
{{- end -}}

{{- define "tidemark.kafkaVolumeMounts" -}}
{{- $tls := .Values.kafka.tls }}
{{- if and $tls.enabled $tls.caSecret }}
- { name: kafka-ca, mountPath: /etc/tidemark/kafka-ca, readOnly: true }
{{- end }}
{{- if and $tls.enabled $tls.clientSecret }}
- { name: kafka-client, mountPath: /etc/tidemark/kafka-client, readOnly: true }
{{- end }}
{{- end -}}

{{- define "tidemark.kafkaEnv" -}}
{{- /* Called with the root context, or (dict "root" . "component" "gateway"|"worker"): a component
       may have a Kafka user of its own (kafka.sasl.gateway / kafka.sasl.worker), for its own ACLs. */}}
{{- $root := .root | default . -}}
{{- $sasl := $root.Values.kafka.sasl -}}
{{- $own := dict -}}
{{- if .component }}{{- $own = index $sasl .component | default dict -}}{{- end -}}
{{- $secret := $own.existingSecret | default $sasl.existingSecret -}}
{{- $username := $own.username | default $sasl.username -}}
- name: KAFKA_BROKERS
  value: {{ required "kafka.brokers is required (host:port[,host:port])" $root.Values.kafka.brokers | quote }}
{{- if $root.Values.kafka.sasl.enabled }}
- name: KAFKA_SASL_MECHANISM
  value: {{ $root.Values.kafka.sasl.mechanism | quote }}
{{- if eq $root.Values.kafka.sasl.mechanism "OAUTHBEARER" }}
{{- /* A token file kept fresh by your own sidecar or projected volume (MSK IAM, OIDC brokers). */}}
- name: KAFKA_SASL_TOKEN_FILE
  value: {{ required "kafka.sasl.tokenFile is required with OAUTHBEARER" $root.Values.kafka.sasl.tokenFile | quote }}
{{- else }}
- name: KAFKA_SASL_USERNAME
{{- if $username }}
  value: {{ $username | quote }}
{{- else }}
  valueFrom:
    secretKeyRef:
      name: {{ required "kafka.sasl.existingSecret is required when SASL is enabled" $secret }}
      key: {{ $root.Values.kafka.sasl.usernameKey }}
{{- end }}
- name: KAFKA_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ required "kafka.sasl.existingSecret is required when SASL is enabled" $secret }}
      key: {{ $root.Values.kafka.sasl.passwordKey }}
{{- end }}
{{- end }}
- name: K8S_POD_NAME
  valueFrom: { fieldRef: { fieldPath: metadata.name } }
- name: K8S_NAMESPACE
  valueFrom: { fieldRef: { fieldPath: metadata.namespace } }
- name: K8S_NODE_NAME
  valueFrom: { fieldRef: { fieldPath: spec.nodeName } }
{{- if $root.Values.otel.endpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ $root.Values.otel.endpoint | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ $root.Values.otel.protocol | quote }}
- name: OTEL_TRACES_EXPORTER
  value: otlp
- name: OTEL_METRICS_EXPORTER
  value: otlp
{{- if $root.Values.otel.resourceAttributes }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ $root.Values.otel.resourceAttributes | quote }}
{{- end }}
{{- if $root.Values.otel.traceEvents }}
- name: TIDEMARK_TRACE_EVENTS
  value: "true"
{{- end }}
{{- end }}
{{- end -}}

{{- define "tidemark.podSecurity" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile: { type: RuntimeDefault }
{{- end -}}

{{- define "tidemark.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities: { drop: [ALL] }
{{- end -}}

{{/* The gateway's authentication flags, from auth.mode (the values schema requires a choice). */}}
{{- define "tidemark.authArgs" -}}
{{- $auth := .Values.auth -}}
{{- if eq $auth.mode "none" }}
- --auth
- none
{{- else if eq $auth.mode "tokens" }}
{{- $_ := required "auth.tokens.existingSecret: the Secret with lines \"<token> <subject>\" (auth.mode=tokens)" $auth.tokens.existingSecret }}
- --auth-tokens
- {{ printf "/etc/tidemark/auth/%s" $auth.tokens.key | quote }}
{{- else if eq $auth.mode "jwt" }}
- --auth-jwks
- {{ required "auth.jwt.jwksUrl is required with auth.mode=jwt" $auth.jwt.jwksUrl | quote }}
- --auth-issuer
- {{ required "auth.jwt.issuer is required with auth.mode=jwt" $auth.jwt.issuer | quote }}
- --auth-audience
- {{ required "auth.jwt.audience is required with auth.mode=jwt" $auth.jwt.audience | quote }}
{{- with $auth.jwt.publicUrl }}
- --public-url
- {{ . | quote }}
{{- end }}
{{- with $auth.jwt.scopes }}
- --auth-scopes
- {{ join " " . | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* A NetworkPolicy rule letting Prometheus (anywhere in the cluster) scrape the metrics port. */}}
{{- define "tidemark.metricsIngress" -}}
{{- if .Values.metrics.enabled }}
- ports:
    - { port: {{ .Values.metrics.port }}, protocol: TCP }
  from:
    - namespaceSelector: {}
{{- end }}
{{- end -}}

{{/* Limits as flags: each set value of a `limits` map (maxFooBar: 3 → --max-foo-bar 3). */}}
{{- define "tidemark.limitArgs" -}}
{{- range $name, $value := . }}
{{- if not (kindIs "invalid" $value) }}
- --{{ kebabcase $name }}
- {{ $value | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The event-id secret (and, during a rotation, the previous one) as files, not environment variables:
a file is not in the process environment (/proc/<pid>/environ, crash reports), and it is read-only.
*/}}
{{- define "tidemark.secretArgs" -}}
- --secret-file
- /etc/tidemark/event-id/{{ .Values.eventIdSecret.key }}
{{- with .Values.eventIdSecret.previous }}
{{- if .existingSecret }}
- --previous-secret-file
- /etc/tidemark/event-id-previous/{{ .key }}
{{- end }}
{{- end }}
{{- end }}

{{- define "tidemark.secretVolumeMounts" -}}
- { name: event-id-secret, mountPath: /etc/tidemark/event-id, readOnly: true }
{{- if .Values.eventIdSecret.previous.existingSecret }}
- { name: event-id-previous, mountPath: /etc/tidemark/event-id-previous, readOnly: true }
{{- end }}
{{- end }}

{{- define "tidemark.secretVolumes" -}}
- name: event-id-secret
  secret:
    secretName: {{ include "tidemark.eventIdSecretName" . }}
    defaultMode: 256  # 0400, in decimal: every YAML reader agrees
{{- with .Values.eventIdSecret.previous }}
{{- if .existingSecret }}
- name: event-id-previous
  secret:
    secretName: {{ .existingSecret }}
    defaultMode: 256
{{- end }}
{{- end }}
{{- end }}

{{/* Egress of gateways and workers, when restricted: DNS, the Kafka ports, the rules added. */}}
{{- define "tidemark.egress" -}}
{{- if .Values.networkPolicy.egress.enabled }}
egress:
  - ports:
      - { port: 53, protocol: UDP }
      - { port: 53, protocol: TCP }
  - ports:
      {{- range .Values.networkPolicy.egress.kafkaPorts }}
      - { port: {{ . }}, protocol: TCP }
      {{- end }}
  {{- with .Values.networkPolicy.egress.extra }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}
{{- end }}

{{/* The whole seconds of a duration the CLI takes (250ms, 20s, 2m; "0"). */}}
{{- define "tidemark.seconds" -}}
{{- $d := toString . -}}
{{- if hasSuffix "ms" $d -}}{{ div (atoi (trimSuffix "ms" $d)) 1000 }}
{{- else if hasSuffix "s" $d -}}{{ atoi (trimSuffix "s" $d) }}
{{- else if hasSuffix "m" $d -}}{{ mul (atoi (trimSuffix "m" $d)) 60 }}
{{- else -}}0{{- end -}}
{{- end -}}

{{/*
The worker's handoff timeout, checked against its termination grace period: the pod must outlive
the handoff (the calls it lets end), with time to leave the group and commit after it.
*/}}
{{- define "tidemark.workerHandoff" -}}
{{- $handoff := toString .Values.worker.handoffTimeout -}}
{{- $grace := int .Values.worker.terminationGracePeriodSeconds -}}
{{- if gt (add (include "tidemark.seconds" $handoff | atoi) 5) $grace -}}
{{- fail (printf "worker.handoffTimeout (%s) must be at least 5s shorter than worker.terminationGracePeriodSeconds (%d): the pod is killed before its calls end" $handoff $grace) -}}
{{- end -}}
{{- $handoff -}}
{{- end -}}

{{/*
The gateway's drain timeout, checked against its termination grace period: the preStop sleep, then
the drain, must end before the pod is killed.
*/}}
{{- define "tidemark.gatewayDrain" -}}
{{- $drain := toString .Values.gateway.drainTimeout -}}
{{- $grace := int .Values.gateway.terminationGracePeriodSeconds -}}
{{- if gt (add (include "tidemark.seconds" $drain | atoi) (int .Values.gateway.preStopSleepSeconds) 2) $grace -}}
{{- fail (printf "gateway.drainTimeout (%s) plus gateway.preStopSleepSeconds (%d) must be at least 2s shorter than gateway.terminationGracePeriodSeconds (%d): the pod is killed before its answers end" $drain (int .Values.gateway.preStopSleepSeconds) $grace) -}}
{{- end -}}
{{- $drain -}}
{{- end -}}
