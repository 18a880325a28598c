--[[
  Writes or deletes one push notification config of a front-door task (the caller's TaskPushNotificationConfig).
  A write replaces the config of the same id, or adds one while the task holds fewer than the limit (ARGV[4]).
  The hash lives beside the workflow's keys and expires with its retention (ARGV[5]; 0 keeps it), renewed on each write.
  KEYS[1] the task's push configs hash (field: config id, value: config JSON)
  ARGV[1] 'set' | 'delete'
  ARGV[2] config id
  ARGV[3] config JSON ('' for delete)
  ARGV[4] most configs per task
  ARGV[5] retention (ms); 0: no expiry
  Returns: 1 written (set) or deleted (delete), 0 not there (delete), 2 refused: the task holds the most configs (set)
]]
if ARGV[1] == 'delete' then
  return redis.call('HDEL', KEYS[1], ARGV[2])
end
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[4]) then
  return 2
end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
if tonumber(ARGV[5]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[5]) end
return 1
