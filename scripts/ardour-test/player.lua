ardour {
	["type"]    = "dsp",
	name        = "Spinet Test Player",
	category    = "Utility",
	license     = "MIT",
	author      = "The Spinet developers",
	description = [[Plays the events of Spinet's Ardour test at their session samples (scripts/ardour-test.sh writes them into EVENTS).]]
}

-- "SAMPLE B1 B2 B3" per line, packed in one string: a Lua table per event
-- crashed ardour7-lua at about 9,000 events.
EVENTS = [[
@EVENTS@
]]

local frames, bytes = {}, {}
local next_event, last_pos = 1, -1

function dsp_ioconfig ()
	return { { midi_in = 1, midi_out = 1, audio_in = 0, audio_out = 0 } }
end

function dsp_init (rate)
	for f, a, b, c in EVENTS:gmatch ("(%d+) (%d+) (%d+) (%d+)") do
		frames[#frames + 1] = tonumber (f)
		local status = tonumber (a)
		if status >= 0xC0 and status < 0xE0 then   -- program change, channel pressure: two bytes
			bytes[#bytes + 1] = { status, tonumber (b) }
		else
			bytes[#bytes + 1] = { status, tonumber (b), tonumber (c) }
		end
	end
end

-- Each event once, at its sample; one the transport passed before the
-- player ran (the first cycle of a roll) at the start of the cycle.
function dsp_run (_, _, n_samples)
	if not Session:transport_rolling () then return end
	local pos = Session:transport_sample ()
	if pos < last_pos then next_event = 1 end   -- a locate back
	last_pos = pos
	local n = 1
	while next_event <= #frames and frames[next_event] < pos + n_samples do
		local t = frames[next_event] - pos
		if t < 0 then t = 0 end
		midiout[n] = { time = t + 1, data = bytes[next_event] }   -- times are 1-based
		n = n + 1
		next_event = next_event + 1
	end
end
