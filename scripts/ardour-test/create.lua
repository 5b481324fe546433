-- Creates Spinet's Ardour test session: a MIDI track whose instrument is
-- Spinet's LV2, holding one MIDI region with the test's music, the
-- parameters set.
-- Arguments through the environment: SESSION_DIR, SESSION_NAME, FRAMES (the
-- region's length) and EVENTS ("SAMPLE STATUS DATA1 DATA2" lines, decimal).
--
-- The region: headless Lua has no way to create a MIDI source itself (no
-- SourceFactory, no import), but a MIDI track's bounce makes one. The
-- track, still off (the engine does not run it), gets the test's event
-- processor (spinet_test_events.lua: the controller and program events at
-- their samples), is bounced from 0 to FRAMES with that processor as the
-- end point, and the bounce's region goes into the track's playlist. The
-- notes are then written into the region with Ardour's MIDI model API (a
-- note diff command), as an editor would; the model has no patch-change
-- command in Lua, hence the bounce for the programs.
local dir, name = os.getenv ("SESSION_DIR"), os.getenv ("SESSION_NAME")
local frames = tonumber (os.getenv ("FRAMES"))
local uri = "https://spinet.dev/plugins/spinet"
AudioEngine:set_backend ("None (Dummy)", "", "")
local s = create_session (dir, name, 48000)
assert (s, "no session")
for p in ARDOUR.LuaAPI.list_plugins ():iter () do
	if p.unique_id == uri then print ("ardour-test: listed", p.name, "creator", p.creator, "category", p.category) end
end
local tl = s:new_midi_track (ARDOUR.ChanCount (ARDOUR.DataType ("midi"), 1), ARDOUR.ChanCount (ARDOUR.DataType ("audio"), 2),
	true, ARDOUR.PluginInfo (), nil, nil, 1, "Synth", ARDOUR.PresentationInfo.max_order, ARDOUR.TrackMode.Normal, true, false)
local track = tl:front ()
-- only the region's events: the track's own MIDI input (the dummy
-- backend's ports) off
track:to_midi_track ():set_input_active (false)

-- 1. the region, from a bounce of the event processor
track:set_active (false, nil)
local events = ARDOUR.LuaAPI.new_luaproc (s, "Spinet Test Events")
assert (not events:isnil (), "the test's event processor not found")
assert (track:add_processor_by_index (events, 0, nil, true) == 0, "the event processor not added")
local region = track:to_track ():bounce_range (0, frames, ARDOUR.InterThreadInfo (), events, true, "spinet-test")
assert (not region:isnil (), "the bounce made no region")
track:remove_processor (events, nil, true)
track:set_active (true, nil)
local playlist = track:to_track ():playlist ()
playlist:add_region (region, Temporal.timepos_t (0), 1, false, 0, 0, false)

-- 2. the notes, through the region's MIDI model
local model = region:to_midiregion ():model ()
local tm = Temporal.TempoMap.read ()
local cmd = model:new_note_diff_command ("Spinet test notes")
local list = {}
for f, a, b, c in os.getenv ("EVENTS"):gmatch ("(%d+) (%d+) (%d+) (%d+)") do
	list[#list + 1] = { tonumber (f), tonumber (a), tonumber (b), tonumber (c) }
end
for i, on in ipairs (list) do
	if on[2] >= 0x90 and on[2] < 0xA0 and on[4] > 0 then
		local off
		for j = i + 1, #list do
			local e = list[j]
			if e[3] == on[3] and (e[2] == on[2] - 0x10 or (e[2] == on[2] and e[4] == 0)) then off = e break end
		end
		assert (off, "a note without its note-off")
		local t0, t1 = tm:quarters_at_sample (on[1]), tm:quarters_at_sample (off[1])
		cmd:add (ARDOUR.LuaAPI.new_noteptr (on[2] - 0x90, t0, t1 - t0, on[3], on[4]))
	end
end
model:apply_command (s, cmd)
for n in ARDOUR.LuaAPI.note_list (model):iter () do
	print ("ardour-test: region note", n:channel () + 1, n:note (), n:velocity (), "at", tm:sample_at_beats (n:time ()), "for", n:length ():str (), "beats")
end
print ("ardour-test: region", region:name (), "at", region:position ():samples (), "length", region:length ():samples (), "regions in the playlist", playlist:n_regions ())

-- 3. Spinet, its parameters
local spinet = ARDOUR.LuaAPI.new_plugin (s, uri, ARDOUR.PluginType.LV2, "")
assert (not spinet:isnil (), "Spinet's LV2 not found")
assert (track:add_processor_by_index (spinet, 0, nil, true) == 0, "Spinet not added")
-- gain -6 dB, reverb return 0.25 (the control ports 4 and 5: their
-- parameter indices are 0 and 1)
ARDOUR.LuaAPI.set_processor_param (spinet, 0, -6)
ARDOUR.LuaAPI.set_processor_param (spinet, 1, 0.25)
-- Ardour hands control values to a plugin in its process cycle: let one run
ARDOUR.LuaAPI.wait_for_process_callback (2, 2000)
print ("ardour-test: latency: Spinet", spinet:signal_latency (), "track", track:signal_latency (), "playback", track:playback_latency ())
s:save_state ("", false, false, false, false, false)
close_session ()
