-- Read as kstatus reads it (Flux's health): Healthy only once the status controller has
-- reported on this generation with Ready=True, Degraded while Stalled=True (phase Failed),
-- Progressing otherwise, a ModelDeployment no controller has reported on included.
hs = {status = "Progressing", message = "waiting for the Runway status controller"}
if obj.status == nil then
  return hs
end
local observed = obj.status.observedGeneration
if observed == nil or observed ~= obj.metadata.generation then
  return hs
end
for _, c in ipairs(obj.status.conditions or {}) do
  if c.type == "Stalled" and c.status == "True" then
    return {status = "Degraded", message = c.message or "Stalled"}
  end
end
for _, c in ipairs(obj.status.conditions or {}) do
  if c.type == "Ready" and c.status == "True" then
    return {status = "Healthy", message = c.message or "Ready"}
  end
end
hs.message = obj.status.message or obj.status.phase or hs.message
return hs
