# Func's Python API (func.overlord.client) for the system's python3: a
# func-rs.pth naming /usr/share/func/python in its /usr/lib site directory.
if command -v python3 >/dev/null 2>&1; then
	site=$(python3 -c 'import site; print([p for p in site.getsitepackages() if p.startswith("/usr/lib")][0])' 2>/dev/null) &&
		[ -d "$site" ] && echo /usr/share/func/python >"$site/func-rs.pth" || :
fi
