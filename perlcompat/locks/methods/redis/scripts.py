"""The Redis lock protocol: its keys, the acquire step's replies, and the Lua scripts.

Each step of a lock is one script, so that it is atomic on the server (the
algorithm is told in the package docstring).  A Perl script still running beside
the ported ones can run the same texts (docs/redis.md, "Perl scripts sharing the
lock").  :class:`_Script` runs one by ``EVALSHA``, falling back to ``EVAL``.
"""

from __future__ import annotations

KEY_PREFIX = "perlcompat:lock:"
#: the other keys of lock NAME: each kind has its own prefix, so no lock name can
#: equal another lock's internal key (``perlcompat:lock:q:wake`` is only lock "q:wake").
FENCE_PREFIX = "perlcompat:fence:"
WAITING_PREFIX = "perlcompat:waiting:"
WAKE_PREFIX = "perlcompat:wake:"
EPOCH_KEY = "perlcompat:epoch"

#: replies of the acquire script (first element)
GRANTED, BUSY, NO_EPOCH, HELD_OFF, MAX_LEASE_CONFLICT, RESTARTED = 1, 0, -1, -2, -3, -4

# The epoch: "resume_ms max_lease_ms run_id" (older records: "resume_ms max_lease_ms", "0").
# KEYS: lock, fence, epoch, waiting.  ARGV: owner, ttl ms, waiting-mark ms, max lease ms.
ACQUIRE = """
local epoch = redis.call('GET', KEYS[3])
if not epoch then return {-1, 0} end
local mine = tonumber(ARGV[4])
local resume, max, run = string.match(epoch, '^(%d+) (%d+) (%x+)$')
if not resume then resume, max = string.match(epoch, '^(%d+) (%d+)$') end
if resume then
  resume, max = tonumber(resume), tonumber(max)
else
  resume, max = tonumber(epoch), 0
  if not resume then
    return redis.error_reply('ERR ' .. KEYS[3] .. ' is not "resume_ms max_lease_ms run_id"')
  end
end
if tonumber(ARGV[2]) > mine then return {-3, mine} end
if mine < max then return {-3, max} end
if mine > max then
  redis.call('SET', KEYS[3], string.format('%.0f %.0f', resume, mine) .. (run and ' ' .. run or ''))
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local wait = resume - now
local state = -2
if wait <= 0 then
  local value = redis.call('GET', KEYS[1])
  if not value then
    local info = redis.pcall('INFO', 'server')
    local id = type(info) == 'string' and string.match(info, 'run_id:(%x+)')
    if id and id ~= run then return {-4, run or ''} end
    redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. now, 'PX', ARGV[2])
    local fence = redis.call('INCR', KEYS[2])
    if fence == 1 or fence <= resume * 1000 then
      fence = t[1] .. string.format('%06d', tonumber(t[2]))
      redis.call('SET', KEYS[2], fence)
    end
    return {1, now, fence}
  end
  if string.sub(value, 1, #ARGV[1] + 1) == ARGV[1] .. ' ' then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return {1, string.sub(value, #ARGV[1] + 2), redis.call('GET', KEYS[2])}
  end
  wait = redis.call('PTTL', KEYS[1])
  state = 0
end
redis.call('SET', KEYS[4], '1', 'PX', ARGV[3])
return {state, wait}
"""

# KEYS: lock, waiting, wake.  ARGV: our value, wake-list ms.
RELEASE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('DEL', KEYS[3])
  redis.call('RPUSH', KEYS[3], '1')
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
end
return 1
"""

# KEYS: lock.  ARGV: our value, ttl ms.
EXTEND = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
"""

# KEYS: epoch.  ARGV: max lease ms.  Returns 0 nothing to do, 1 the record adopted (it named
# no server), 2 restarted (held off from the start), 3 missing (from the start), 4 flushed
# (from now).  Without INFO (an ACL), a missing record holds off from now.
START_EPOCH = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local max = tonumber(ARGV[1])
local info = redis.pcall('INFO', 'server')
local id, uptime = false, false
if type(info) == 'string' then
  id = string.match(info, 'run_id:(%x+)')
  uptime = tonumber(string.match(info, 'uptime_in_seconds:(%d+)'))
end
local started = now  -- the server's start; unknown: as if now
if uptime then  -- whole seconds between two truncated clock readings: may be 1 s too many
  started = now - math.max(uptime - 1, 0) * 1000
end
local epoch = redis.call('GET', KEYS[1])
local code, resume = 3, started + max
if epoch then
  local r, m, run = string.match(epoch, '^(%d+) (%d+) (%x+)$')
  if not r then r, m = string.match(epoch, '^(%d+) (%d+)$') end
  if not r then r, m = tonumber(epoch), 0 end
  if not r then
    return redis.error_reply('ERR ' .. KEYS[1] .. ' is not "resume_ms max_lease_ms run_id"')
  end
  r, m = tonumber(r), tonumber(m)
  if m > max then max = m end
  if not id or run == id then return 0 end
  code, resume = 1, r  -- a record naming no server (set by hand, or without INFO): ours now
  if run then code, resume = 2, math.max(r, started + max) end  -- another run of the server
elseif uptime then  -- missing: lost in a flush, or never set on this run of the server
  local stats = redis.pcall('INFO', 'commandstats')
  local flushed = type(stats) ~= 'string'
  if not flushed then
    for _, name in ipairs({'flushall', 'flushdb', 'swapdb'}) do
      local calls = string.match(stats, 'cmdstat_' .. name .. ':calls=(%d+)')
      if calls and tonumber(calls) > 0 then flushed = true end
    end
  end
  if flushed then code, resume = 4, now + max end
end
redis.call('SET', KEYS[1], string.format('%.0f %.0f', resume, max) .. (id and ' ' .. id or ''))
return code
"""

# KEYS: lock, fence.
DESCRIBE = """
local value = redis.call('GET', KEYS[1])
if not value then return false end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {value, redis.call('PTTL', KEYS[1]), now, redis.call('GET', KEYS[2]) or '0'}
"""


class _Script:
    """A Lua script run by ``EVALSHA``, loaded by ``EVAL`` when the server lacks it."""

    __slots__ = ("sha", "text")

    def __init__(self, text: str) -> None:
        import hashlib

        self.text = text
        self.sha = hashlib.sha1(text.encode()).hexdigest()


_ACQUIRE = _Script(ACQUIRE)
_RELEASE = _Script(RELEASE)
_EXTEND = _Script(EXTEND)
_START_EPOCH = _Script(START_EPOCH)
_DESCRIBE = _Script(DESCRIBE)

# The hold-off lifted by hand (``perlcompat redis-lift``).  KEYS: epoch.  ARGV: the lock key
# prefix, "1" to lift.  Returns {ms of hold-off left (-1: no record yet, the first client
# holds off), the lock keys that exist}; lifts (SET epoch 0) only when there are none.
LIFT = """
local cursor, held = '0', {}
repeat
  local r = redis.call('SCAN', cursor, 'MATCH', ARGV[1] .. '*', 'COUNT', 1000)
  cursor = r[1]
  for _, k in ipairs(r[2]) do held[#held + 1] = k end
until cursor == '0'
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local epoch = redis.call('GET', KEYS[1])
local left = -1
if epoch then
  local resume = tonumber(string.match(epoch, '^(%d+)'))
  if resume then left = math.max(resume - now, 0) end
end
if ARGV[2] == '1' and #held == 0 then redis.call('SET', KEYS[1], '0') end
return {left, held}
"""
_LIFT = _Script(LIFT)
