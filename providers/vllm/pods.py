"""Direct vLLM: Runway renders the Deployments itself, so the pods carry the template labels
(airunway.ai/model-deployment, app.kubernetes.io/component, podTemplate labels) and the server
listens on --port 8000."""

from core.rendering.pods import no_operator_pods, template_port, template_selector

pool_selector = template_selector
model_port = template_port
operator_pods = no_operator_pods
