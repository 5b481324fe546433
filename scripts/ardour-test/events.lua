ardour {
	["type"]    = "dsp",
	name        = "Spinet Test Events",
	category    = "Utility",
	license     = "MIT",
	author      = "The Spinet developers",
	description = [[Emits the controller and program events of Spinet's Ardour test at their samples, counted from its first run (scripts/ardour-test.sh writes them into EVENTS). The test bounces it once into the MIDI region and removes it.]]
}

-- "SAMPLE B1 B2 B3" per line, packed in one string: a Lua table per event
-- crashed ardour7-lua at about 9,000 events.
EVENTS = [[
@EVENTS@
]]

local frames, bytes = {}, {}
local next_event, pos = 1, 0

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

-- The samples are counted from the first run: the test adds this processor
-- to a track that is off (the engine never runs it) and bounces the track
-- from sample 0, so its runs are the bounce's, in order.
function dsp_run (_, _, n_samples)
	local n = 1
	while next_event <= #frames and frames[next_event] < pos + n_samples do
		midiout[n] = { time = frames[next_event] - pos + 1, data = bytes[next_event] }   -- times are 1-based
		n = n + 1
		next_event = next_event + 1
	end
	pos = pos + n_samples
end
