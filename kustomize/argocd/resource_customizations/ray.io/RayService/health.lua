hs = {status = "Progressing", message = "waiting for the RayService"}
if obj.status ~= nil and obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "Ready" and c.status == "True" then
      hs.status = "Healthy"
      hs.message = c.message or "RayService ready"
    end
  end
end
return hs
