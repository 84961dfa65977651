# On removal, the func-rs.pth that %post wrote.
if [ "$1" = 0 ]; then
	for pth in /usr/lib/python3*/site-packages/func-rs.pth /usr/lib/python3*/dist-packages/func-rs.pth; do
		[ ! -f "$pth" ] || rm -f "$pth"
	done
fi
