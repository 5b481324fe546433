-- Reopens the test session (after its font moved), prints Spinet's
-- parameters as Ardour holds them and saves it again.
local dir, name = os.getenv ("SESSION_DIR"), os.getenv ("SESSION_NAME")
AudioEngine:set_backend ("None (Dummy)", "", "")
local s = load_session (dir, name)
assert (s, "the session did not load")
for t in s:get_tracks ():iter () do
	local i = 0
	while true do
		local p = t:nth_plugin (i)
		if p:isnil () then break end
		if p:display_name () == "Spinet" then
			local gain, reverb = ARDOUR.LuaAPI.get_processor_param (p, 0), ARDOUR.LuaAPI.get_processor_param (p, 1)
			print ("ardour-test: reopened gain", gain, "reverb", reverb)
		end
		i = i + 1
	end
end
s:save_state ("", false, false, false, false, false)
close_session ()
