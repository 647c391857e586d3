-- What a speaker's agent announced it accepts, at its last enrollment, Watch or status report
-- (issue 25): {"bundle_formats": [...], "capabilities": [...]}. NULL: it announced nothing, an
-- agent of the release before announcements (served rl-bundle/1 and no feature), or none has
-- spoken yet.
ALTER TABLE speakers ADD COLUMN agent_accepts jsonb;
