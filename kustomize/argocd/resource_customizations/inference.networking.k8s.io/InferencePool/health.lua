hs = {status = "Progressing", message = "waiting for a Gateway to accept the pool"}
if obj.status ~= nil and obj.status.parents ~= nil then
  for _, p in ipairs(obj.status.parents) do
    for _, c in ipairs(p.conditions or {}) do
      if c.type == "Accepted" and c.status == "True" then
        hs.status = "Healthy"
        hs.message = "accepted by a Gateway"
      end
    end
  end
end
return hs
