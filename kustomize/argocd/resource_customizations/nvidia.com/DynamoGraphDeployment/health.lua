hs = {status = "Progressing", message = "waiting for the DynamoGraphDeployment"}
if obj.status ~= nil and obj.status.state ~= nil then
  if obj.status.state == "successful" then
    hs.status = "Healthy"
  elseif obj.status.state == "failed" then
    hs.status = "Degraded"
  end
  hs.message = obj.status.message or obj.status.state
end
return hs
