hs = {status = "Progressing", message = "waiting for the Workspace"}
if obj.status ~= nil and obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "WorkspaceSucceeded" and c.status == "True" then
      hs.status = "Healthy"
      hs.message = c.message or "Workspace succeeded"
    elseif c.type == "WorkspaceSucceeded" and c.status == "False" then
      hs.status = "Degraded"
      hs.message = c.message or "Workspace failed"
    end
  end
end
return hs
