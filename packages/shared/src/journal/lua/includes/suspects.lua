-- A delegation row's suspect evidence (noteSuspect-1.lua), the rule of journal/suspects.ts in Lua: `suspects` and
-- `suspectsLost` are the row's fields as HMGET gives them (false when absent).
-- suspectsPending: suspects wait to be read (the field present and not empty): what a finished row's settle waits for.
-- keepsSuspects: suspects pending, or some counted lost (`suspectsLost` above 0): what a reconcile reads or decides on.
local function suspectsPending(suspects)
  return (suspects and suspects ~= '') and true or false
end
local function keepsSuspects(suspects, suspectsLost)
  return suspectsPending(suspects) or (tonumber(suspectsLost) or 0) > 0
end
