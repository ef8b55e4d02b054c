from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0004_vote_revision_window'),
    ]

    # The tables keep their names (db_table): the move to core changes the migration state only.
    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name='job',
                    name='created_by',
                ),
                migrations.RemoveField(
                    model_name='job',
                    name='project',
                ),
                migrations.DeleteModel(
                    name='ApiToken',
                ),
            ],
        ),
    ]
