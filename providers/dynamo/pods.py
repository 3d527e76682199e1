"""NVIDIA Dynamo: the operator creates and owns the InferencePool (managesInferencePool), so
Runway renders no pool and no selector; the defaults below are never asked for a pool."""

from core.rendering.pods import no_operator_pods, template_port, template_selector

pool_selector = template_selector
model_port = template_port
operator_pods = no_operator_pods
